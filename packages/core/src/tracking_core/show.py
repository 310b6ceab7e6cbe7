"""Old path of ``tracking_core.cli.show``, kept so imports written against it keep working."""

from .cli.show import *  # noqa: F403
