"""Old path of ``tracking_core.contract.distributed``: the same module object, so imports and monkeypatching keep working."""

import sys

from .contract import distributed as _module
from .contract.distributed import *  # noqa: F403

sys.modules[__name__] = _module
