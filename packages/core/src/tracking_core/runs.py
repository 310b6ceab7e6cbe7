"""Old path of ``tracking_core.cli.runs``: the same module object, so imports and monkeypatching keep working."""

import sys

from .cli import runs as _module
from .cli.runs import *  # noqa: F403

sys.modules[__name__] = _module
