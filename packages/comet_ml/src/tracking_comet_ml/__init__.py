"""Comet backend for tracking (``log_with="comet_ml"``).

Importing this package does not import comet_ml: the SDK is loaded in ``CometMLTracker.start()``.
"""

from .__about__ import __version__
from .tracker import CometMLTracker

__all__ = ["CometMLTracker", "__version__"]
