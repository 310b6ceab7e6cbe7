"""Old path of ``tracking_core.cli.demo``: the same module object, so imports and monkeypatching keep working."""

import sys

from .cli import demo as _module
from .cli.demo import *  # noqa: F403

sys.modules[__name__] = _module
