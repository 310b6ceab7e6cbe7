"""Old path of ``tracking_core.contract.selection``, kept so imports written against it keep working."""

from .contract.selection import *  # noqa: F403
