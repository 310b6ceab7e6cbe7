"""``log_kwargs`` for MLflow: ``mlflow.log_metrics``' own options, and MLflow 3's per-metric ones.

``model_id`` and ``dataset`` go into each ``Metric`` where the installed MLflow's ``Metric`` takes them
(MLflow 3); an older MLflow gets the points without them and one warning.
"""

from __future__ import annotations

import inspect
from typing import Any

from tracking_core.kit import warn_once

#: ``log_kwargs`` this tracker takes: ``mlflow.log_metrics``' own options (``timestamp`` is the dispatcher's)
LOG_OPTIONS = frozenset(("synchronous", "timestamp", "model_id", "dataset"))
ENTITY_OPTIONS = frozenset(("model_id", "dataset"))  # the options that go into each Metric
NO_OPTIONS: dict[str, Any] = {}


def metric_options(backend: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``model_id`` / ``dataset`` for each ``Metric``, where this MLflow's ``Metric`` takes them (MLflow 3);
    an older one gets one warning and the points without them."""
    from mlflow.entities import Metric

    dataset = kwargs.get("dataset")
    wanted = {
        "model_id": kwargs.get("model_id"),
        "dataset_name": getattr(dataset, "name", None),
        "dataset_digest": getattr(dataset, "digest", None),
    }
    wanted = {name: value for name, value in wanted.items() if value is not None}
    if not wanted:
        return {}
    accepted = set(inspect.signature(Metric.__init__).parameters)
    missing = sorted(set(wanted) - accepted)
    if missing:
        warn_once(
            backend,
            "log_kwargs",
            f"this MLflow's metrics take no {', '.join(missing)} (MLflow 3 does); logged without it",
            reason="metric-options",
        )
    return {name: value for name, value in wanted.items() if name in accepted}
