"""Old path of ``tracking_core.cli.show``: the same module object, so imports and monkeypatching keep working."""

import sys

from .cli import show as _module
from .cli.show import *  # noqa: F403

sys.modules[__name__] = _module
