"""Old path of ``tracking_core.kit.filelock``, kept so imports written against it keep working."""

from .kit.filelock import *  # noqa: F403
