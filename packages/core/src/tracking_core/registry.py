"""Old path of ``tracking_core.contract.registry``: the same module object, so imports and monkeypatching keep working."""

import sys

from .contract import registry as _module
from .contract.registry import *  # noqa: F403

sys.modules[__name__] = _module
