"""Old path of ``tracking_core.kit.paths``, kept so imports written against it keep working."""

from .kit.paths import *  # noqa: F403
