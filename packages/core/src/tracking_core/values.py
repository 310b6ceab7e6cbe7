"""Old path of ``tracking_core.intake.values``, kept so imports written against it keep working."""

from .intake.values import *  # noqa: F403
