"""Old path of ``tracking_core.store.manifest``, kept so imports written against it keep working."""

from .store.manifest import *  # noqa: F403
