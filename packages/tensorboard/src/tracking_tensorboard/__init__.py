"""TensorBoard backend for tracking (``log_with="tensorboard"``).

Importing this package does not import tensorboard: the SDK is loaded in ``TensorBoardTracker.start()``.
"""

from .__about__ import __version__
from .tracker import TensorBoardTracker

__all__ = ["TensorBoardTracker", "__version__"]
