"""Old path of ``tracking_core.kit.adapters``, kept so imports written against it keep working."""

from .kit.adapters import *  # noqa: F403
