"""Old path of ``tracking_core.backends.jsonl``, kept so imports written against it keep working."""

from .backends.jsonl import *  # noqa: F403
