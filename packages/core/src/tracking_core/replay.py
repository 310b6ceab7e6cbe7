"""Old path of ``tracking_core.cli.replay``, kept so imports written against it keep working."""

from .cli.replay import *  # noqa: F403
