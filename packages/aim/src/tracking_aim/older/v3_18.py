"""Aim 3.18: no run artifacts (Aim 3.19 added them), and an index manager that indexes only a run with a
progress file (failing on one already indexed)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tracking_core import GeneralTracker
from tracking_core.kit import warn_once

NO_ARTIFACTS = "this Aim release has no run artifacts (added in Aim 3.19): log_artifact(s) stores nothing"


def has_artifacts(tracker: GeneralTracker, run: Any) -> bool:
    """Whether this Aim stores run artifacts; if not, one warning and a report note."""
    if hasattr(run, "log_artifact"):
        return True
    warn_once(tracker.name, "log_artifact", NO_ARTIFACTS, reason="no-artifacts")
    tracker.add_note(NO_ARTIFACTS)
    return False


def runs_to_index(manager: Any, hashes: list[str]) -> Iterator[str]:
    """The runs ``manager.index`` takes: on Aim 3.18 those with a progress file (``run_needs_indexing``);
    later releases have no such check and index any run."""
    needs_indexing = getattr(manager, "run_needs_indexing", None)
    return (run_hash for run_hash in hashes if needs_indexing is None or needs_indexing(run_hash))
