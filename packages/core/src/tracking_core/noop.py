"""Old path of ``tracking_core.contract.noop``, kept so imports written against it keep working."""

from .contract.noop import *  # noqa: F403
