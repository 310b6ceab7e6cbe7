"""Old path of ``tracking_core.kit.png``, kept so imports written against it keep working."""

from .kit.png import *  # noqa: F403
