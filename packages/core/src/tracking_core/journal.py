"""Old path of ``tracking_core.store.journal``, kept so imports written against it keep working."""

from .store.journal import *  # noqa: F403
