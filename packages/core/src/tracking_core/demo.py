"""Old path of ``tracking_core.cli.demo``, kept so imports written against it keep working."""

from .cli.demo import *  # noqa: F403
