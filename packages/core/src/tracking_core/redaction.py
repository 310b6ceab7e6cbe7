"""Old path of ``tracking_core.intake.redaction``, kept so imports written against it keep working."""

from .intake.redaction import *  # noqa: F403
