"""Old path of ``tracking_core.run.rendezvous``, kept so imports written against it keep working."""

from .run.rendezvous import *  # noqa: F403
