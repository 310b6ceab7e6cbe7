"""Old path of ``tracking_core.delivery.spill``: the same module object, so imports and monkeypatching keep working."""

import sys

from .delivery import spill as _module
from .delivery.spill import *  # noqa: F403

sys.modules[__name__] = _module
