"""A batch of metric points written as ``Live.log_metric`` writes them, one file append per metric.

``Live.log_metric`` opens, appends to and closes ``plots/metrics/<name>.tsv`` and copies the whole
summary for every point, so a point costs more the more metrics a run has: at 100 metrics a step the
backend stored 11,400 points/s however the points were batched. Grouped by metric, a batch costs one
append per file and one summary update per metric (255,000 points/s there). What
is written and the ``Live`` state left behind (its ``_metrics`` and ``summary``) are what
the per-point calls leave: ``tests/test_rows.py`` compares the two paths file by file.
"""

from __future__ import annotations

import csv
import math
import os
import time
from collections.abc import Iterable
from typing import Any

#: one point: the metric's name in DVCLive's folder, its step, its value (a number or a string) and the
#: ``Live.log_metric`` keywords it was logged with (``timestamp``, ``plot``)
Point = tuple[str, int, "int | float | str", dict[str, bool]]


def log_points(live: Any, points: Iterable[Point]) -> None:
    """Every point into its ``.tsv`` and ``live.summary``, in order (``live.step`` is the caller's to set)."""
    from dvclive.plots import Metric

    rows: dict[str, list[list[Any]]] = {}
    latest: dict[str, Any] = {}
    now_ms: int | None = None
    for name, step, value, options in points:
        if not isinstance(value, str) and (math.isnan(value) or math.isinf(value)):
            value = str(value)  # as DVCLive writes them: "nan", "inf", "-inf"
        if name not in live._metrics:
            live._metrics[name] = Metric(name, live.plots_dir)
        if options.get("plot", True):
            row: list[Any] = [step, value]
            if options.get("timestamp", False):
                now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
                row.insert(0, now_ms)
            rows.setdefault(name, []).append(row)
        latest[name] = (step, value)  # a name keeps its first place: the order DVCLive's summary grows in
    for name, series in rows.items():
        _append(live._metrics[name], series)
    for name, (at, value) in latest.items():
        metric = live._metrics[name]
        metric.step = at
        live.summary = _set_in(live.summary, metric.summary_keys, value)


def log_sample(live: Any, values: dict[str, float], index: int, timestamp_ms: int) -> None:
    """One system sample as DVCLive's own monitor writes its rows (``timestamp``, ``step``, value) but at
    step = the sample's ``index``; the latest values in ``live.summary``, ``live.step`` left as it is."""
    from dvclive.plots import Metric

    for name, value in values.items():
        stored: float | str = str(value) if math.isnan(value) or math.isinf(value) else value
        metric = live._metrics.get(name)
        if metric is None:
            metric = live._metrics[name] = Metric(name, live.plots_dir)
        _append(metric, [[timestamp_ms, index, stored]])
        live.summary = _set_in(live.summary, metric.summary_keys, stored)


def is_sample_file(relative: str) -> bool:
    """Whether ``plots/metrics/<relative>`` holds the library's samples (``system/cpu.percent.tsv``, on the
    samples' own axis), not a series at training steps (DVCLive's own ``system/cpu/usage (%).tsv`` is one)."""
    parts = relative.split("/")
    return len(parts) == 2 and parts[0] == "system" and "." in parts[1].removesuffix(".tsv")


def _append(metric: Any, series: list[list[Any]]) -> None:
    path = metric.output_path  # DVCLive's own path for the metric; it creates the folder
    existed = path.exists()
    with open(path, "a", encoding="utf-8", newline="") as file:
        writer = csv.writer(file, delimiter="\t", lineterminator=os.linesep)
        if not existed:
            column = os.path.basename(metric.name)
            writer.writerow(["timestamp", "step", column] if len(series[0]) == 3 else ["step", column])
        writer.writerows(series)


def _set_in(tree: dict[str, Any], keys: list[str], value: Any) -> dict[str, Any]:
    """``tree`` with ``value`` at the nested ``keys``, as a copy along the path (DVCLive's summary is replaced, not
    changed in place, so a summary read earlier stays as it was)."""
    copy = dict(tree)
    if len(keys) == 1:
        copy[keys[0]] = value
    else:
        child = copy.get(keys[0])
        copy[keys[0]] = _set_in(child if isinstance(child, dict) else {}, keys[1:], value)
    return copy
