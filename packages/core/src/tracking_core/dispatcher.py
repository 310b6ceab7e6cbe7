"""Old path of ``tracking_core.run.dispatcher``, kept so imports written against it keep working."""

from .run.dispatcher import *  # noqa: F403
