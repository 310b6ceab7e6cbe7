"""Old path of ``tracking_core.run.session``: the same module object, so imports and monkeypatching keep working."""

import sys

from .run import session as _module
from .run.session import *  # noqa: F403

sys.modules[__name__] = _module
