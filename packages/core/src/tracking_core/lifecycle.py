"""Old path of ``tracking_core.run.lifecycle``, kept so imports written against it keep working."""

from .run.lifecycle import *  # noqa: F403
