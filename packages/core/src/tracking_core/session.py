"""Old path of ``tracking_core.run.session``, kept so imports written against it keep working."""

from .run.session import *  # noqa: F403
