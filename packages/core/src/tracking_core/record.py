"""Old path of ``tracking_core.intake.record``: the same module object, so imports and monkeypatching keep working."""

import sys

from .intake import record as _module
from .intake.record import *  # noqa: F403

sys.modules[__name__] = _module
