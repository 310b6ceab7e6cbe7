"""Old path of ``tracking_core.process.remote_view``, kept so imports written against it keep working."""

from .process.remote_view import *  # noqa: F403
