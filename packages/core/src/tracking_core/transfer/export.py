"""``tracking export``: one run's points as CSV, JSON or Parquet, one row per step and key.

Each row carries the run's context (project, run id, where it came from) and its config flattened
into ``config.<key>`` columns, so rows from several exports concatenate into one table. Parquet needs
pyarrow, which core does not depend on: without it the command says so and writes nothing.

Only what the user logged is exported unless ``system=True``: then the run's system samples follow,
one row per sample and key with the sample's index in a ``sample`` column and no step (a sample was
taken on a clock, not at a step; see :mod:`tracking_core.cli.samples`).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..cli.samples import RunSamples, is_system, load_samples
from ..store.journal import read_header, read_journal
from ..store.manifest import MANIFEST_NAME

__all__ = ["FORMATS", "RunRows", "export_run", "flatten"]

FORMATS = ("csv", "json", "parquet")
COLUMNS = ("project", "run_id", "source", "step", "time", "key", "value")
SAMPLE_COLUMNS = ("project", "run_id", "source", "step", "sample", "time", "key", "value")  # with the samples


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
    """One journal's context, config and points, and the run's system samples kept apart."""

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
        self._journal_samples: list[tuple[Any, dict[str, Any]]] = []  # system/* values an older run journaled
        for record in read_journal(journal):
            if record["type"] == "config":
                self.config = merge_config(self.config, record.get("values") or {})
            elif record["type"] == "metrics":
                sampled = {k: v for k, v in (record.get("values") or {}).items() if is_system(k)}
                if sampled:
                    self._journal_samples.append((record.get("time"), sampled))

    def points(self) -> Iterator[tuple[int | None, float | None, str, Any]]:
        """(step, time, key, value) for every point the user logged, in journal order (no system sample)."""
        for record in read_journal(self.journal):
            if record["type"] == "metrics":
                step, moment = record.get("step"), record.get("time")
                for key, value in (record.get("values") or {}).items():
                    if not is_system(key):
                        yield step, moment, key, value

    def samples(self) -> RunSamples:
        """The run's system samples: its ``system.jsonl``, then any ``system/*`` values its journal holds."""
        started = self.context.get("started")
        return load_samples(
            self.journal.parent, self._journal_samples, float(started) if isinstance(started, (int, float)) else None
        )


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def export_run(journal: Path, fmt: str, output: str | os.PathLike[str] | None, *, system: bool = False) -> str:
    """The export as text when ``output`` is ``None`` or ``"-"``; else written to ``output`` (and ``""`` returned).

    ``system`` adds the run's system samples (their own ``sample`` index, no step).
    """
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    run = RunRows(journal)
    config = {f"config.{key}": _cell(value) for key, value in flatten(run.config).items()}
    context = [run.context.get(name) for name in COLUMNS[:3]]
    samples = run.samples() if system else None
    if fmt == "parquet":
        return _parquet(run, config, context, output, samples)
    if fmt == "json":
        document = {
            **run.context,
            "config": run.config,
            "rows": [{"step": s, "time": t, "key": k, "value": v} for s, t, k, v in run.points()],
        }
        if samples is not None:
            document["samples"] = [{"sample": i, "time": t, "key": k, "value": v} for i, t, k, v in samples.rows()]
        text = json.dumps(document, indent=1, default=str) + "\n"
    else:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        constant = list(config.values())
        if samples is None:
            writer.writerow([*COLUMNS, *config])
            for step, moment, key, value in run.points():
                writer.writerow([*context, step, moment, key, value, *constant])
        else:
            writer.writerow([*SAMPLE_COLUMNS, *config])
            for step, moment, key, value in run.points():
                writer.writerow([*context, step, None, moment, key, value, *constant])
            for index, moment, key, value in samples.rows():
                writer.writerow([*context, None, index, moment, key, value, *constant])
        text = buffer.getvalue()
    if output is None or str(output) == "-":
        return text
    Path(output).write_text(text, encoding="utf-8")
    return ""


def _parquet(
    run: RunRows,
    config: dict[str, Any],
    context: list[Any],
    output: str | os.PathLike[str] | None,
    samples: RunSamples | None = None,
) -> str:
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
    steps: list[Any] = []
    indexes: list[int | None] = []
    times, keys, values, texts = [], [], [], []
    for step, moment, key, value in run.points():
        steps.append(step)
        indexes.append(None)
        times.append(moment)
        keys.append(key)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        values.append(float(value) if number else None)
        texts.append(None if number else str(value))
    for index, moment, key, reading in samples.rows() if samples is not None else ():
        steps.append(None)
        indexes.append(index)
        times.append(moment)
        keys.append(key)
        values.append(reading)
        texts.append(None)
    count = len(steps)
    columns: dict[str, Any] = {name: [value] * count for name, value in zip(COLUMNS[:3], context)}
    columns["step"] = pa.array(steps, pa.int64())
    if samples is not None:
        columns["sample"] = pa.array(indexes, pa.int64())
    columns.update(time=pa.array(times, pa.float64()), key=keys)
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
