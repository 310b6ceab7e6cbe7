"""System metrics in MLflow: its own monitor as ``mlflow.start_run`` starts it, or the library's samples in its place.

``mlflow.start_run`` (what accelerate's ``MLflowTracker`` calls) starts MLflow's ``SystemMetricsMonitor`` when
``MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING`` is true (``mlflow.enable_system_metrics_logging()`` sets it); off by
default. The tracker creates its run through ``MlflowClient`` instead, so it starts the same monitor itself under
the same rule. Either way MLflow keeps system metrics as ``system/...`` metrics whose step counts the samples:
the library's samples (``system/cpu.percent``, ...) are stored the same way, step = sample index.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
from typing import Any

_ENABLE = "MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING"


def sdk_monitor_wanted() -> bool:
    """Whether ``mlflow.start_run`` would start MLflow's system metrics monitor (its environment variable)."""
    try:
        from mlflow.environment_variables import MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING
    except ImportError:
        return os.environ.get(_ENABLE, "").strip().lower() in ("true", "1")
    return bool(MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING.get())


def start_sdk_monitor(run_id: str, uri: str, resumed: bool) -> tuple[Any, str | None]:
    """MLflow's ``SystemMetricsMonitor`` for the run, started; or ``None`` and why it could not be.

    A monitor that takes no ``tracking_uri`` (MLflow 2.16, the floor, and other early releases) reads and
    writes through the process's global tracking URI only: it would miss a run in another store (the embedded
    one), so it is left off there with a note.
    """
    if importlib.util.find_spec("psutil") is None:
        return None, f"{_ENABLE} is set but psutil is not installed: MLflow's own system metrics are not logged"
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    if "tracking_uri" in inspect.signature(SystemMetricsMonitor).parameters:
        monitor = SystemMetricsMonitor(run_id, resume_logging=resumed, tracking_uri=uri)
    else:
        import mlflow

        if mlflow.get_tracking_uri() != uri:
            return None, (
                f"{_ENABLE} is set, but this MLflow's system metrics monitor logs only to the global tracking URI, "
                f"not to this run's store {uri}: not started (set MLFLOW_TRACKING_URI, or init(system_metrics=True))"
            )
        monitor = SystemMetricsMonitor(run_id, resume_logging=resumed)
    monitor.start()
    return monitor, None


def sample_entry(values: dict[str, float], index: int, timestamp: float) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """One sample as a ``log_batch`` entry: its ``system/...`` names, step = its index, its own time."""
    return dict(values), int(index), {"timestamp": timestamp}
