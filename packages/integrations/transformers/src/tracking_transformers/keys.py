"""The metric names transformers' own reporting callbacks use, so dashboards look the same.

The ``Trainer`` logs ``loss``, ``learning_rate``, ``eval_loss``, ``test_accuracy``...; its W&B and
TensorBoard callbacks show them as ``train/loss``, ``eval/loss``, ``test/accuracy``: evaluation and
prediction metrics lose their ``eval_``/``test_`` prefix for an ``eval/``/``test/`` section, and
everything else goes under ``train/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SECTIONS = (("eval_", "eval/"), ("test_", "test/"))


def trainer_key(key: str) -> str:
    """``eval_loss`` -> ``eval/loss``, ``test_f1`` -> ``test/f1``, ``loss`` -> ``train/loss``."""
    for prefix, section in _SECTIONS:
        if key.startswith(prefix):
            return section + key[len(prefix) :]
    return "train/" + key


def trainer_keys(logs: Mapping[str, Any]) -> dict[str, Any]:
    """Every key of a ``Trainer`` log renamed with :func:`trainer_key`."""
    return {trainer_key(str(key)): value for key, value in logs.items()}
