"""Old path of ``tracking_core.intake.media``: the same module object, so imports and monkeypatching keep working."""

import sys

from .intake import media as _module
from .intake.media import *  # noqa: F403

sys.modules[__name__] = _module
