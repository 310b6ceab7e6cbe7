"""Old path of ``tracking_core.contract.noop``: the same module object, so imports and monkeypatching keep working."""

import sys

from .contract import noop as _module
from .contract.noop import *  # noqa: F403

sys.modules[__name__] = _module
