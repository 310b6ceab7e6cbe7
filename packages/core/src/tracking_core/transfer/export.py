"""``tracking export``: one run's points as CSV, JSON or Parquet, one row per step and key.

Each row carries the run's context (project, run id, where it came from) and its config flattened
into ``config.<key>`` columns, so rows from several exports concatenate into one table. Parquet needs
pyarrow, which core does not depend on: without it the command says so and writes nothing.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..store.journal import read_header, read_journal
from ..store.manifest import MANIFEST_NAME

__all__ = ["FORMATS", "RunRows", "export_run", "flatten"]

FORMATS = ("csv", "json", "parquet")
COLUMNS = ("project", "run_id", "source", "step", "time", "key", "value")


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config as ``{"a.b": value}``; lists and other leaves stay whole."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


class RunRows:
    """One journal's context, config and points."""

    def __init__(self, journal: Path) -> None:
        from ..intake.config import merge_config

        self.journal = journal
        self.header = read_header(journal)
        self.context: dict[str, Any] = {
            "project": self.header.get("project"),
            "run_id": self.header.get("run_id"),
            "source": self.header.get("source"),
        }
        manifest = journal.parent / MANIFEST_NAME
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
                self.context["started"] = data.get("started")
                if isinstance(data.get("imported_from"), dict):
                    self.context["imported_from"] = data["imported_from"]
            except (OSError, ValueError):
                pass
        self.config: dict[str, Any] = {}
        for record in read_journal(journal):
            if record["type"] == "config":
                self.config = merge_config(self.config, record.get("values") or {})

    def points(self) -> Iterator[tuple[int | None, float | None, str, Any]]:
        """(step, time, key, value) for every point, in journal order."""
        for record in read_journal(self.journal):
            if record["type"] == "metrics":
                step, moment = record.get("step"), record.get("time")
                for key, value in (record.get("values") or {}).items():
                    yield step, moment, key, value


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def export_run(journal: Path, fmt: str, output: str | os.PathLike[str] | None) -> str:
    """The export as text when ``output`` is ``None`` or ``"-"``; else written to ``output`` (and ``""`` returned)."""
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    run = RunRows(journal)
    config = {f"config.{key}": _cell(value) for key, value in flatten(run.config).items()}
    context = [run.context.get(name) for name in COLUMNS[:3]]
    if fmt == "parquet":
        return _parquet(run, config, context, output)
    if fmt == "json":
        document = {
            **run.context,
            "config": run.config,
            "rows": [{"step": s, "time": t, "key": k, "value": v} for s, t, k, v in run.points()],
        }
        text = json.dumps(document, indent=1, default=str) + "\n"
    else:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([*COLUMNS, *config])
        constant = list(config.values())
        for step, moment, key, value in run.points():
            writer.writerow([*context, step, moment, key, value, *constant])
        text = buffer.getvalue()
    if output is None or str(output) == "-":
        return text
    Path(output).write_text(text, encoding="utf-8")
    return ""


def _parquet(run: RunRows, config: dict[str, Any], context: list[Any], output: str | os.PathLike[str] | None) -> str:
    from importlib import import_module

    try:  # an optional package core does not depend on (nor type-checks against)
        pa = import_module("pyarrow")
        pq = import_module("pyarrow.parquet")
    except ImportError:
        raise ImportError(
            "--format parquet needs pyarrow, which is not installed (pip install pyarrow); csv and json need nothing"
        ) from None
    if output is None or str(output) == "-":
        raise ValueError("--format parquet writes a binary file: name it with --output FILE")
    steps, times, keys, values, texts = [], [], [], [], []
    for step, moment, key, value in run.points():
        steps.append(step)
        times.append(moment)
        keys.append(key)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        values.append(float(value) if number else None)
        texts.append(None if number else str(value))
    count = len(steps)
    columns: dict[str, Any] = {name: [value] * count for name, value in zip(COLUMNS[:3], context)}
    columns.update(step=pa.array(steps, pa.int64()), time=pa.array(times, pa.float64()), key=keys)
    columns["value"] = pa.array(values, pa.float64())
    if any(text is not None for text in texts):
        columns["text"] = pa.array(texts, pa.string())
    for name, value in config.items():
        columns[name] = [value] * count
    try:
        table = pa.table(columns)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a config column of mixed types: as text
        columns.update({name: [None if v is None else str(v) for v in columns[name]] for name in config})
        table = pa.table(columns)
    metadata = {b"tracking.config": json.dumps(run.config, default=str).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), output)
    return ""
