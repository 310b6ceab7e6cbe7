"""Old path of ``tracking_core.kit.png``: the same module object, so imports and monkeypatching keep working."""

import sys

from .kit import png as _module
from .kit.png import *  # noqa: F403

sys.modules[__name__] = _module
