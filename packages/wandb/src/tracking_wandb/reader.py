"""Read a W&B run back from its local folders: history, config, summary, artifacts and system metrics.

What the run's ``run-<id>.wandb`` transaction log holds (:mod:`tracking_wandb.transaction_log` reads its
records with W&B's own protobuf messages). Used by :meth:`WandBTracker.read_back_history` and the other
``read_back_*`` methods; handy for tests and for inspecting an offline run::

    from tracking_wandb.reader import read_run
    run = read_run("runs/wandb/offline-run-20260101_120000-abcd1234")
    run.metrics()["train/loss"]         # {step: value}
    run.metric_history()["train/loss"]  # [(step, value), ...], every history record in order
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .transaction_log import iter_records, put_item


@dataclass
class RunData:
    """What one run directory holds: history rows by step (and in record order), config, summary, artifacts."""

    directory: Path
    history: dict[int, dict[str, Any]] = field(default_factory=dict)
    rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # every history record, as written
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    artifacts: list[Any] = field(default_factory=list)
    run: Any = None
    record_counts: dict[str, int] = field(default_factory=dict)
    #: the run's system metrics (W&B's monitor, or the library's samples): ``(Unix time, {key: value})``
    stats: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    @property
    def files(self) -> Path:
        """Where W&B keeps media (``media/images/...``, ``media/table/...``)."""
        return self.directory / "files"

    def metrics(self) -> dict[str, dict[int, float]]:
        """``{key: {step: number}}`` of the user's numeric history (W&B's ``_step`` etc. left out)."""
        series: dict[str, dict[int, float]] = {}
        for step, row in self.history.items():
            for key, value in row.items():
                if not key.startswith("_") and isinstance(value, (int, float)) and not isinstance(value, bool):
                    series.setdefault(key, {})[step] = value
        return series

    def metric_history(self) -> dict[str, list[tuple[int, float]]]:
        """``{key: [(step, number), ...]}`` from every history record in order: a step written twice shows twice."""
        series: dict[str, list[tuple[int, float]]] = {}
        for step, row in self.rows:
            for key, value in row.items():
                if not key.startswith("_") and isinstance(value, (int, float)) and not isinstance(value, bool):
                    series.setdefault(key, []).append((step, value))
        return series

    def of_type(self, kind: type | str) -> dict[str, dict[int, Any]]:
        """``{key: {step: value}}`` of history values that are a Python ``kind`` or media ``_type``."""
        found: dict[str, dict[int, Any]] = {}
        for step, row in self.history.items():
            for key, value in row.items():
                if key.startswith("_"):
                    continue
                if isinstance(kind, type):
                    matches = isinstance(value, kind)
                else:
                    matches = isinstance(value, dict) and value.get("_type") == kind
                if matches:
                    found.setdefault(key, {})[step] = value
        return found

    def user_config(self) -> dict[str, Any]:
        """The config as the user gave it (W&B wraps values as ``{"value": ...}`` and adds ``_wandb``)."""
        return {
            key: value["value"] if isinstance(value, dict) and "value" in value else value
            for key, value in self.config.items()
            if key != "_wandb"
        }


def find_log(directory: str | Path) -> Path:
    logs = sorted(Path(directory).glob("run-*.wandb"))
    if len(logs) != 1:
        raise FileNotFoundError(f"expected one run-*.wandb in {directory}, found {[str(log) for log in logs]}")
    return logs[0]


def read_runs(directories: Sequence[str | Path]) -> RunData:
    """One run written in parts (a run resumed by later processes): the folders read oldest first and merged.

    History rows of the same step are merged key by key, a later part winning; config and summary likewise.
    """
    merged = RunData(Path(directories[-1]))
    for directory in directories:
        part = read_run(directory)
        for step, row in part.history.items():
            merged.history.setdefault(step, {}).update(row)
        merged.rows.extend(part.rows)
        merged.config.update(part.config)
        merged.summary.update(part.summary)
        merged.artifacts.extend(part.artifacts)
        merged.stats.extend(part.stats)
        merged.run = part.run
        for kind, count in part.record_counts.items():
            merged.record_counts[kind] = merged.record_counts.get(kind, 0) + count
    return merged


def read_run(directory: str | Path) -> RunData:
    """Read a run directory (``offline-run-*`` or ``run-*``) through its transaction log."""
    run = RunData(Path(directory))
    for record in iter_records(find_log(directory)):
        kind = record.WhichOneof("record_type")
        run.record_counts[kind] = run.record_counts.get(kind, 0) + 1
        if kind == "history":
            row: dict[str, Any] = {}
            for item in record.history.item:
                put_item(row, item)
            run.history.setdefault(record.history.step.num, {}).update(row)
            run.rows.append((record.history.step.num, row))
        elif kind == "config":
            for item in record.config.update:
                put_item(run.config, item)
        elif kind == "run":
            run.run = record.run
            for item in record.run.config.update:
                put_item(run.config, item)
        elif kind == "summary":
            for item in record.summary.update:
                put_item(run.summary, item)
        elif kind == "artifact":
            run.artifacts.append(record.artifact)
        elif kind == "stats":
            items = {item.key: json.loads(item.value_json) for item in record.stats.item}
            run.stats.append((record.stats.timestamp.ToNanoseconds() / 1e9, items))
    return run


def stored_images(value: Any) -> list[str]:
    """The files of an image history value: a list logged under a key, or one image (a figure)."""
    if not isinstance(value, dict):
        return []
    if value.get("_type") == "images/separated":
        return list(value.get("filenames") or [])
    if value.get("_type") == "image-file" and value.get("path"):
        return [value["path"]]
    return []


def images_of(directories: Sequence[str | Path]) -> dict[str, list[tuple[int, Any]]]:
    """Every image in the history of a run's folders (oldest first) as HWC uint8 arrays, from the PNGs W&B wrote."""
    from PIL import Image
    from tracking_core.kit import to_hwc_uint8

    images: dict[str, list[tuple[int, Any]]] = {}
    for directory in directories:
        stored = read_run(directory)
        for step, row in stored.rows:
            for key, value in row.items():
                for name in stored_images(value):
                    with Image.open(stored.files / name) as png:
                        images.setdefault(key, []).append((step, to_hwc_uint8(png)))
    return images
