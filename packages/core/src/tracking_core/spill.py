"""Old path of ``tracking_core.delivery.spill``, kept so imports written against it keep working."""

from .delivery.spill import *  # noqa: F403
