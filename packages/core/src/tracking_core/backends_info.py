"""Old path of ``tracking_core.contract.backends_info``: the same module object, so imports and monkeypatching keep working."""

import sys

from .contract import backends_info as _module
from .contract.backends_info import *  # noqa: F403

sys.modules[__name__] = _module
