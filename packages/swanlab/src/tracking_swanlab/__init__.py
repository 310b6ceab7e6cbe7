"""tracking-swanlab: the ``swanlab`` backend of tracking (SwanLab runs, offline by default without an account).

Importing this package does not import SwanLab; the tracker does, in ``start()``.
"""

from .__about__ import __version__
from .tracker import SwanLabTracker

__all__ = ["SwanLabTracker", "__version__"]
