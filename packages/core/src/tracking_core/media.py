"""Old path of ``tracking_core.intake.media``, kept so imports written against it keep working."""

from .intake.media import *  # noqa: F403
