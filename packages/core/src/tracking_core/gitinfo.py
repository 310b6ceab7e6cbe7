"""Old path of ``tracking_core.kit.gitinfo``, kept so imports written against it keep working."""

from .kit.gitinfo import *  # noqa: F403
