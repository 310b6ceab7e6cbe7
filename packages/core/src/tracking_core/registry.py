"""Old path of ``tracking_core.contract.registry``, kept so imports written against it keep working."""

from .contract.registry import *  # noqa: F403
