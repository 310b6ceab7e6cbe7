"""Old path of ``tracking_core.store.manifest``: the same module object, so imports and monkeypatching keep working."""

import sys

from .store import manifest as _module
from .store.manifest import *  # noqa: F403

sys.modules[__name__] = _module
