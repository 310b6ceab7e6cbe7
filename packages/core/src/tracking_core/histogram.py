"""Old path of ``tracking_core.contract.histogram``, kept so imports written against it keep working."""

from .contract.histogram import *  # noqa: F403
