"""Old path of ``tracking_core.delivery.mapping``: the same module object, so imports and monkeypatching keep working."""

import sys

from .delivery import mapping as _module
from .delivery.mapping import *  # noqa: F403

sys.modules[__name__] = _module
