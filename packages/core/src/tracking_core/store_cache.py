"""Old path of ``tracking_core.kit.store_cache``, kept so imports written against it keep working."""

from .kit.store_cache import *  # noqa: F403
