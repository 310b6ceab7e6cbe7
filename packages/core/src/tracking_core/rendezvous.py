"""Old path of ``tracking_core.run.rendezvous``: the same module object, so imports and monkeypatching keep working."""

import sys

from .run import rendezvous as _module
from .run.rendezvous import *  # noqa: F403

sys.modules[__name__] = _module
