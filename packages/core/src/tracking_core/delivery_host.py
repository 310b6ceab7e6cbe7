"""Old path of ``tracking_core.process.host``, kept so imports written against it keep working."""

from .process.host import *  # noqa: F403
