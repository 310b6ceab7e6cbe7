"""Old path of ``tracking_core.kit.gitinfo``: the same module object, so imports and monkeypatching keep working."""

import sys

from .kit import gitinfo as _module
from .kit.gitinfo import *  # noqa: F403

sys.modules[__name__] = _module
