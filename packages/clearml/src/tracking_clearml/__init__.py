"""tracking-clearml: the ClearML backend of ``tracking`` (imports no SDK until a run starts)."""

from .__about__ import __version__
from .tracker import ClearMLTracker

__all__ = ["ClearMLTracker", "__version__"]
