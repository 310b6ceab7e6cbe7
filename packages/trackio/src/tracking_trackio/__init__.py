"""Trackio backend for ``tracking``: importing this package does not import trackio."""

from .__about__ import __version__
from .tracker import TrackioTracker

__all__ = ["TrackioTracker", "__version__"]
