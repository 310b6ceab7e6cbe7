"""Old path of ``tracking_core.contract.selection``: the same module object, so imports and monkeypatching keep working."""

import sys

from .contract import selection as _module
from .contract.selection import *  # noqa: F403

sys.modules[__name__] = _module
