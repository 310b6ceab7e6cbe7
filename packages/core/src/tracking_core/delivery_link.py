"""Old path of ``tracking_core.process.link``: the same module object, so imports and monkeypatching keep working."""

import sys

from .process import link as _module
from .process.link import *  # noqa: F403

sys.modules[__name__] = _module
