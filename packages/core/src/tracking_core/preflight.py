"""Old path of ``tracking_core.intake.preflight``, kept so imports written against it keep working."""

from .intake.preflight import *  # noqa: F403
