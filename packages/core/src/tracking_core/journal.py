"""Old path of ``tracking_core.store.journal``: the same module object, so imports and monkeypatching keep working."""

import sys

from .store import journal as _module
from .store.journal import *  # noqa: F403

sys.modules[__name__] = _module
