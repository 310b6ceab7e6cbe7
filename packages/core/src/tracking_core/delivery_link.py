"""Old path of ``tracking_core.process.link``, kept so imports written against it keep working."""

from .process.link import *  # noqa: F403
