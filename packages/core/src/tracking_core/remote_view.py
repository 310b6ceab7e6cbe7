"""Old path of ``tracking_core.process.remote_view``: the same module object, so imports and monkeypatching keep working."""

import sys

from .process import remote_view as _module
from .process.remote_view import *  # noqa: F403

sys.modules[__name__] = _module
