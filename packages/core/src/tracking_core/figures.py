"""Old path of ``tracking_core.intake.figures``, kept so imports written against it keep working."""

from .intake.figures import *  # noqa: F403
