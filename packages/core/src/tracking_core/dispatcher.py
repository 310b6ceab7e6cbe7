"""Old path of ``tracking_core.run.dispatcher``: the same module object, so imports and monkeypatching keep working."""

import sys

from .run import dispatcher as _module
from .run.dispatcher import *  # noqa: F403

sys.modules[__name__] = _module
