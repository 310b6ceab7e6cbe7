"""Old path of ``tracking_core.cli.replay``: the same module object, so imports and monkeypatching keep working."""

import sys

from .cli import replay as _module
from .cli.replay import *  # noqa: F403

sys.modules[__name__] = _module
