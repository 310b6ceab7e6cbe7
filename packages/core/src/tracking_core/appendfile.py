"""Old path of ``tracking_core.kit.appendfile``: the same module object, so imports and monkeypatching keep working."""

import sys

from .kit import appendfile as _module
from .kit.appendfile import *  # noqa: F403

sys.modules[__name__] = _module
