"""Old path of ``tracking_core.run.lifecycle``: the same module object, so imports and monkeypatching keep working."""

import sys

from .run import lifecycle as _module
from .run.lifecycle import *  # noqa: F403

sys.modules[__name__] = _module
