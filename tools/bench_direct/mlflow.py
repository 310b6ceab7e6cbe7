"""MLflow called directly in its embedded mode (a sqlite store), for tools/bench.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def open_run(logging_dir: Path) -> tuple[Callable[[dict, int], None], Callable[[], None]]:
    """Start an MLflow run in ``sqlite:///<logging_dir>/mlflow.db``; return (log(values, step), finish()).

    Set up as a careful user of the SDK would: an absolute sqlite URI (the default is ``./mlflow.db``),
    artifacts beside it, telemetry off. ``log`` is MLflow's plain per-step call,
    ``mlflow.log_metrics(values, step=step)`` (synchronous: one sqlite transaction per call);
    ``finish`` is ``mlflow.end_run()``, after which everything is committed.
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    root = Path(logging_dir).absolute()
    root.mkdir(parents=True, exist_ok=True)
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    experiment = mlflow.get_experiment_by_name("bench")
    experiment_id = (
        experiment.experiment_id
        if experiment
        else mlflow.create_experiment("bench", artifact_location=(root / "mlartifacts").as_uri())
    )
    mlflow.start_run(experiment_id=experiment_id)

    def log(values: dict, step: int) -> None:
        mlflow.log_metrics(values, step=step)

    return log, mlflow.end_run
