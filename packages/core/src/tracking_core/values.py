"""Old path of ``tracking_core.intake.values``: the same module object, so imports and monkeypatching keep working."""

import sys

from .intake import values as _module
from .intake.values import *  # noqa: F403

sys.modules[__name__] = _module
