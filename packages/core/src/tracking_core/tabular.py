"""Old path of ``tracking_core.cli.tabular``: the same module object, so imports and monkeypatching keep working."""

import sys

from .cli import tabular as _module
from .cli.tabular import *  # noqa: F403

sys.modules[__name__] = _module
