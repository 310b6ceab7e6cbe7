"""Accelerate with tracking: change one import line and ``Accelerator(log_with=...)`` uses tracking's backends.

    from tracking_accelerate import Accelerator   # instead of: from accelerate import Accelerator

``import tracking_accelerate`` does not import accelerate (or torch): ``Accelerator`` is built on first
access, since a script that imports it is about to use accelerate anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .__about__ import __version__

if TYPE_CHECKING:
    from .accelerator import Accelerator
    from .foreign import AccelerateTracker

__all__ = ["AccelerateTracker", "Accelerator", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Accelerator":
        from .accelerator import Accelerator

        return Accelerator
    if name == "AccelerateTracker":
        from .foreign import AccelerateTracker

        return AccelerateTracker
    raise AttributeError(f"module 'tracking_accelerate' has no attribute {name!r}")
