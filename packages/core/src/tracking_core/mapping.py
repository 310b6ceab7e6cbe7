"""Old path of ``tracking_core.delivery.mapping``, kept so imports written against it keep working."""

from .delivery.mapping import *  # noqa: F403
