"""Old path of ``tracking_core.contract.tracker``, kept so imports written against it keep working."""

from .contract.tracker import *  # noqa: F403
