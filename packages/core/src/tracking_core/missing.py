"""Old path of ``tracking_core.delivery.missing``, kept so imports written against it keep working."""

from .delivery.missing import *  # noqa: F403
