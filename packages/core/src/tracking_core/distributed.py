"""Old path of ``tracking_core.contract.distributed``, kept so imports written against it keep working."""

from .contract.distributed import *  # noqa: F403
