"""Old path of ``tracking_core.kit.paths``: the same module object, so imports and monkeypatching keep working."""

import sys

from .kit import paths as _module
from .kit.paths import *  # noqa: F403

sys.modules[__name__] = _module
