"""The early Trackio line (0.0.17 to 0.0.20), whose ``Run.log(metrics)`` takes no step, detected, not assumed.

Such a ``Run.log`` sends each row to the dashboard's ``/log`` handler, which numbers the run's rows itself
(0, 1, 2, ...): the step a caller gives would be lost. :class:`StepKeepingWriter` writes each row with
``SQLiteStorage.bulk_log(project, run, [metrics], steps=[step])`` instead, the storage call Trackio's own CSV
import uses for rows with their steps: the same table, the same JSON, the step kept. ``step=None`` counts on
from the run's highest stored step, as later releases do.

Nothing else of those releases needs this module: ``trackio.init`` still makes the run (its name, its
``resume`` check) with the in-process dashboard client of :mod:`tracking_trackio.older.before_v0_24`.
"""

from __future__ import annotations

import inspect
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import store


def logs_steps(run: Any) -> bool:
    """True when this release's ``Run.log`` takes a ``step`` (0.2+)."""
    try:
        return "step" in inspect.signature(run.log).parameters
    except (TypeError, ValueError):
        return True


class StepKeepingWriter:
    """Writes one run's rows with their steps through ``SQLiteStorage.bulk_log``, in the calling thread."""

    def __init__(self, run: Any, project: str) -> None:
        self.run = run
        self.project = project
        self._highest: int | None = None  # the highest step stored for this run; read from the store once

    def log(self, values: dict[str, Any], step: int | None, **kwargs: Any) -> None:
        from trackio.sqlite_storage import SQLiteStorage

        if kwargs:
            inspect.signature(self.run.log).bind(values, **kwargs)  # Trackio's own TypeError for its own log
        if step is None:
            step = self._highest_stored() + 1
        # 0.0.17 connects to its database without making the folder first (0.0.20 makes it)
        Path(SQLiteStorage.get_project_db_path(self.project)).parent.mkdir(parents=True, exist_ok=True)
        SQLiteStorage.bulk_log(
            project=self.project,
            run=self.run.name,
            metrics_list=[values],
            steps=[step],
            timestamps=[datetime.now().isoformat()],
        )
        self._highest = max(self._highest_stored(), step)

    def _highest_stored(self) -> int:
        if self._highest is None:  # a resumed run counts on from its earlier process's rows
            steps = [row.get("step") for row in store.run_logs(self.project, self.run.name)]
            self._highest = max((step for step in steps if isinstance(step, int)), default=-1)
        return self._highest


def can_keep_steps() -> bool:
    """True when this release's storage class writes rows with given steps (``bulk_log``, 0.0.17+)."""
    return hasattr(store.sqlite_storage(), "bulk_log")
