"""Old path of ``tracking_core.intake.figures``: the same module object, so imports and monkeypatching keep working."""

import sys

from .intake import figures as _module
from .intake.figures import *  # noqa: F403

sys.modules[__name__] = _module
