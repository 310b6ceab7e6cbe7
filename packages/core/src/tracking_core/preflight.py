"""Old path of ``tracking_core.intake.preflight``: the same module object, so imports and monkeypatching keep working."""

import sys

from .intake import preflight as _module
from .intake.preflight import *  # noqa: F403

sys.modules[__name__] = _module
