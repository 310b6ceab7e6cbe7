"""Old path of ``tracking_core.contract.tracker``: the same module object, so imports and monkeypatching keep working."""

import sys

from .contract import tracker as _module
from .contract.tracker import *  # noqa: F403

sys.modules[__name__] = _module
