"""Aim backend for ``tracking``: an embedded Aim repo under ``logging_dir`` (Aim is imported only in ``start()``)."""

from .__about__ import __version__
from .tracker import AimTracker

__all__ = ["AimTracker", "__version__"]
