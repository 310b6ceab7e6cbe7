"""Old path of ``tracking_core.kit.adapters``: the same module object, so imports and monkeypatching keep working."""

import sys

from .kit import adapters as _module
from .kit.adapters import *  # noqa: F403

sys.modules[__name__] = _module
