"""Lightning with tracking: ``Trainer(logger=TrackingLogger(log_with=[...]))`` sends metrics and
hyperparameters to tracking's backends.

``import tracking_lightning`` does not import Lightning (or torch): ``TrackingLogger`` is built on
first access, on ``lightning.pytorch`` when it is installed, else on ``pytorch_lightning``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .__about__ import __version__

if TYPE_CHECKING:
    from .logger import TrackingLogger

__all__ = ["TrackingLogger", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "TrackingLogger":
        from .logger import TrackingLogger

        return TrackingLogger
    raise AttributeError(f"module 'tracking_lightning' has no attribute {name!r}")
