"""Old path of ``tracking_core.cli.runs``, kept so imports written against it keep working."""

from .cli.runs import *  # noqa: F403
