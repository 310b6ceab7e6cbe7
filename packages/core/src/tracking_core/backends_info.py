"""Old path of ``tracking_core.contract.backends_info``, kept so imports written against it keep working."""

from .contract.backends_info import *  # noqa: F403
