"""Old path of ``tracking_core.kit.filelock``: the same module object, so imports and monkeypatching keep working."""

import sys

from .kit import filelock as _module
from .kit.filelock import *  # noqa: F403

sys.modules[__name__] = _module
