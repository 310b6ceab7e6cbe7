"""Aim 3.19 to 3.25: ``Run.artifacts_uri`` fails on a run without one instead of returning ``None``."""

from __future__ import annotations

from typing import Any


def artifacts_uri(run: Any) -> str | None:
    """The run's artifacts URI, ``None`` when it has none (on every release)."""
    try:
        uri: str | None = run.artifacts_uri
    except TypeError:  # aim < 3.26 fails on a run without one
        return None
    return uri
