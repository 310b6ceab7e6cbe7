"""Old path of ``tracking_core.intake.redaction``: the same module object, so imports and monkeypatching keep working."""

import sys

from .intake import redaction as _module
from .intake.redaction import *  # noqa: F403

sys.modules[__name__] = _module
