"""Old path of ``tracking_core.kit.appendfile``, kept so imports written against it keep working."""

from .kit.appendfile import *  # noqa: F403
