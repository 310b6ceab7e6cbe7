"""Old path of ``tracking_core.kit.store_cache``: the same module object, so imports and monkeypatching keep working."""

import sys

from .kit import store_cache as _module
from .kit.store_cache import *  # noqa: F403

sys.modules[__name__] = _module
