"""Old path of ``tracking_core.contract.histogram``: the same module object, so imports and monkeypatching keep working."""

import sys

from .contract import histogram as _module
from .contract.histogram import *  # noqa: F403

sys.modules[__name__] = _module
