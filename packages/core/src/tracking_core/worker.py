"""Old path of ``tracking_core.delivery.worker``, kept so imports written against it keep working."""

from .delivery.worker import *  # noqa: F403
