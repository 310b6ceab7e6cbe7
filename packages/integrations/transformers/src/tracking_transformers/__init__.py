"""Transformers with tracking: one callback sends a ``Trainer``'s config and logs to tracking's backends.

    trainer = Trainer(..., args=TrainingArguments(..., report_to="none"),
                      callbacks=[TrackingCallback(log_with=["tensorboard", "mlflow"])])

``import tracking_transformers`` does not import transformers (or torch): ``TrackingCallback`` is built
on first access, since a script that imports it is about to use transformers anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .__about__ import __version__
from .keys import trainer_keys

if TYPE_CHECKING:
    from .callback import TrackingCallback

__all__ = ["TrackingCallback", "__version__", "trainer_keys"]


def __getattr__(name: str) -> Any:
    if name == "TrackingCallback":
        from .callback import TrackingCallback

        return TrackingCallback
    raise AttributeError(f"module 'tracking_transformers' has no attribute {name!r}")
