"""Old path of ``tracking_core.delivery.worker``: the same module object, so imports and monkeypatching keep working."""

import sys

from .delivery import worker as _module
from .delivery.worker import *  # noqa: F403

sys.modules[__name__] = _module
