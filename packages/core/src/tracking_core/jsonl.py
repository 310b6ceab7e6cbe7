"""Old path of ``tracking_core.backends.jsonl``: the same module object, so imports and monkeypatching keep working."""

import sys

from .backends import jsonl as _module
from .backends.jsonl import *  # noqa: F403

sys.modules[__name__] = _module
