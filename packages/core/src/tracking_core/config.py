"""Old path of ``tracking_core.intake.config``: the same module object, so imports and monkeypatching keep working."""

import sys

from .intake import config as _module
from .intake.config import *  # noqa: F403

sys.modules[__name__] = _module
