"""Old path of ``tracking_core.cli.tabular``, kept so imports written against it keep working."""

from .cli.tabular import *  # noqa: F403
