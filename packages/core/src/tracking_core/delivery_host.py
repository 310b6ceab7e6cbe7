"""Old path of ``tracking_core.process.host``: the same module object, so imports and monkeypatching keep working."""

import sys

from .process import host as _module
from .process.host import *  # noqa: F403

sys.modules[__name__] = _module
