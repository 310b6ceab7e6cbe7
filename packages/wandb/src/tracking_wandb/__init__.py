"""tracking-wandb: the Weights & Biases backend of **tracking** (offline under ``logging_dir`` by default).

Importing this package does not import ``wandb``; the SDK is loaded when a run starts.
"""

from .__about__ import __version__
from .tracker import WandBTracker

__all__ = ["WandBTracker", "__version__"]
