"""Old path of ``tracking_core.intake.config``, kept so imports written against it keep working."""

from .intake.config import *  # noqa: F403
