"""tracking-mlflow: the MLflow backend of ``tracking`` (entry point ``mlflow``).

Importing this package does not import MLflow; the SDK is loaded when a run starts.
"""

from .__about__ import __version__
from .tracker import MLflowTracker

__all__ = ["MLflowTracker", "__version__"]
