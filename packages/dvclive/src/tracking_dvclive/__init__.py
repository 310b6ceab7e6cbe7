"""DVCLive backend for tracking (``log_with="dvclive"``).

Importing this package does not import dvclive: the SDK is loaded in ``DVCLiveTracker.start()``.
"""

from .__about__ import __version__
from .tracker import DVCLiveTracker

__all__ = ["DVCLiveTracker", "__version__"]
