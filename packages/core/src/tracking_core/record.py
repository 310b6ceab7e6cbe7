"""Old path of ``tracking_core.intake.record``, kept so imports written against it keep working."""

from .intake.record import *  # noqa: F403
