"""Old path of ``tracking_core.delivery.missing``: the same module object, so imports and monkeypatching keep working."""

import sys

from .delivery import missing as _module
from .delivery.missing import *  # noqa: F403

sys.modules[__name__] = _module
