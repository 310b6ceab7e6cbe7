"""Write one :class:`~.model.SourceRun` as a run folder, the way ``JsonlTracker`` lays one out.

``<logging_dir>/<project>/<run_id>/`` gets ``journal.jsonl`` (every record numbered with ``seq``, so
``tracking replay <run> --to <backend>`` delivers it like any run this library wrote), ``run.json``
with ``imported_from`` (``backend``, ``source_id``, ``location``, ``imported_at``) and the media and
artifacts copied under ``media/`` and ``artifacts/``.

Points keep their source's step and time. They are grouped into one ``metrics`` record per (step, time)
and written in step order, which is the order a backend that refuses to go back in steps (W&B) needs.

Importing is idempotent: a run whose ``imported_from`` names the same backend and source id is
rewritten in its folder (the journal is built aside and swapped in), never duplicated.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..kit.paths import name_problem
from ..store.journal import FORMAT, FORMAT_VERSION, JOURNAL_NAME, encode
from ..store.manifest import MANIFEST_NAME, RunManifest
from .model import Media, Point, SourceRun

__all__ = ["ImportedRun", "find_imported", "imported_runs", "run_id_for", "write_run"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class ImportedRun:
    """What one source run became: its folder and what was (and was not) carried."""

    run_dir: Path
    backend: str
    source_id: str
    location: str
    points: int = 0
    series: int = 0
    steps: tuple[int, int] | None = None
    media: Counter[str] = field(default_factory=Counter)
    not_carried: list[str] = field(default_factory=list)
    replaced: bool = False  # an earlier import of the same source run was rewritten

    def describe(self) -> str:
        span = f"steps {self.steps[0]}..{self.steps[1]}" if self.steps else "no steps"
        media = ", ".join(f"{count} {kind}" for kind, count in sorted(self.media.items()))
        line = f"{self.run_dir}: {self.points} points in {self.series} series ({span})" + (
            f", {media}" if media else ""
        )
        if self.replaced:
            line += " (re-imported in place)"
        return line + "".join(f"\n  not carried: {item}" for item in self.not_carried)


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("._-")[:60]


def run_id_for(run: SourceRun) -> str:
    """A folder name that reads like the source's run and is stable for its identity."""
    digest = hashlib.sha1(f"{run.backend}\0{run.source_id}".encode()).hexdigest()[:8]
    stem = _safe(run.name or run.source_id)
    return f"{stem}-{digest}" if stem else digest


def _project_for(run: SourceRun, project: str | None) -> str:
    if project is not None:
        problem = name_problem(project)
        if problem:
            raise ValueError(f"--project {project!r} {problem}")
        return project
    return _safe(run.project or "") or f"imported-{run.backend}"


def imported_runs(logging_dir: Path) -> dict[tuple[str, str], Path]:
    """``{(backend, source_id): run folder}`` of every imported run under ``logging_dir``."""
    found: dict[tuple[str, str], Path] = {}
    for manifest in logging_dir.glob(f"*/*/{MANIFEST_NAME}"):
        try:
            origin = json.loads(manifest.read_text(encoding="utf-8")).get("imported_from")
        except (OSError, ValueError, AttributeError):
            continue
        if (
            isinstance(origin, dict)
            and isinstance(origin.get("backend"), str)
            and isinstance(origin.get("source_id"), str)
        ):
            found[(origin["backend"], origin["source_id"])] = manifest.parent
    return found


def find_imported(logging_dir: Path, backend: str, source_id: str) -> Path | None:
    """The run folder an earlier import of this source run made under ``logging_dir``, if any."""
    return imported_runs(logging_dir).get((backend, source_id))


class _Sink:
    """The journal being written, with the bookkeeping the report and ``run.json`` need."""

    def __init__(self, path: Path, result: ImportedRun) -> None:
        self.handle = open(path, "w", encoding="utf-8")
        self.result = result
        self.seq = 0
        self.last_step = -1

    def write(self, record: dict[str, Any], numbered: bool = True) -> None:
        if numbered:
            self.seq += 1
            record["seq"] = self.seq
        step = record.get("step")
        if isinstance(step, int):
            self.last_step = max(self.last_step, step)
        self.handle.write(encode(record))


def _write_points(sink: _Sink, points: Iterable[Point]) -> None:
    """Group points into one record per (step, time) and write them in step order."""
    grouped: dict[tuple[int, float | None], list[dict[str, Any]]] = {}
    keys: set[str] = set()
    count = 0
    for key, step, value, moment in points:
        at = (int(step), None if moment is None else round(float(moment), 6))
        records = grouped.setdefault(at, [{}])
        if key in records[-1]:  # the same key twice at one step and time: both kept, in two records
            records.append({})
        records[-1][key] = value
        keys.add(key)
        count += 1
    for (step, moment), records in sorted(grouped.items(), key=lambda item: (item[0][0], item[0][1] or 0.0)):
        for values in records:
            record: dict[str, Any] = {"type": "metrics", "step": step, "values": values}
            if moment is not None:
                record["time"] = moment
            sink.write(record)
    result = sink.result
    result.points, result.series = count, len(keys)
    steps = [step for step, _ in grouped]
    result.steps = (min(steps), max(steps)) if steps else None


def _file_name(key: str, step: int | None, index: int, suffix: str) -> str:
    return f"{_safe(key) or 'item'}-{step if step is not None else 'none'}-{index}{suffix}"


def _image_suffix(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return ".png"
    if data.startswith(b"\xff\xd8"):
        return ".jpg"
    return None


class _ImageList:
    """The images record being built: the images a source keeps under one key at one step, as one list
    (W&B merges a step's values into one row, so separate records would leave it the last image only)."""

    def __init__(self, sink: _Sink) -> None:
        self.sink = sink
        self.record: dict[str, Any] | None = None

    def add(self, key: str, step: int | None, path: str) -> None:
        record = self.record
        if record is not None and record["step"] == step and key in record["images"]:
            record["images"][key].append(path)
            return
        self.close()
        self.record = {"type": "images", "step": step, "images": {key: [path]}}

    def close(self) -> None:
        if self.record is not None:
            self.sink.write(self.record)
            self.record = None


def _write_media(sink: _Sink, run_dir: Path, media: Iterable[Media]) -> None:
    result = sink.result
    counters: Counter[str] = Counter()  # per file name: two keys may make the same one ("a/b", "a_b")
    images = _ImageList(sink)
    for kind, key, step, data, _moment in sorted(media, key=lambda item: (item.step is None, item.step or 0)):
        if kind != "image":
            images.close()
        if kind == "image":
            raw = Path(data).read_bytes() if isinstance(data, (str, os.PathLike)) else bytes(data)
            suffix = _image_suffix(raw)
            if suffix != ".png":  # replay decodes PNG only (core has no image library)
                result.not_carried.append(f"image {key!r} at step {step}: {'JPEG' if suffix else 'unknown format'}")
                continue
            base = _file_name(key, step, 0, suffix)
            index = counters[base]
            counters[base] += 1
            relative = Path("media", "images", _file_name(key, step, index, suffix))
            (run_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            (run_dir / relative).write_bytes(raw)
            images.add(key, step, relative.as_posix())
        elif kind == "table":
            sink.write(
                {"type": "table", "name": key, "step": step, "columns": data.get("columns"), "data": data.get("data")}
            )
        elif kind == "text":
            sink.write({"type": "table", "name": key, "step": step, "columns": ["text"], "data": [[str(data)]]})
        elif kind == "histogram":
            from ..contract.histogram import histogram_from_counts

            try:
                histogram = histogram_from_counts(data["counts"], data["edges"])
            except (KeyError, TypeError, ValueError) as error:
                result.not_carried.append(f"histogram {key!r} at step {step}: {error}")
                continue
            sink.write({"type": "histogram", "name": key, "step": step, "histogram": histogram.to_json()})
        elif kind == "artifact":
            source = Path(data)
            target = run_dir / "artifacts" / key
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            elif source.is_file():
                shutil.copyfile(source, target)
            else:
                result.not_carried.append(f"artifact {key!r}: {source} is not there")
                continue
            parent = Path(key).parent.as_posix()
            record_type = "artifacts" if source.is_dir() else "artifact"
            sink.write(
                {
                    "type": record_type,
                    "local_path": str(target.resolve()),
                    "artifact_path": None if parent == "." else parent,
                }
            )
        else:
            result.not_carried.append(f"{kind} {key!r} at step {step}: no journal record for this kind")
            continue
        result.media[kind] += 1
    images.close()


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def write_run(
    run: SourceRun,
    logging_dir: str | os.PathLike[str],
    *,
    project: str | None = None,
    known: dict[tuple[str, str], Path] | None = None,
) -> ImportedRun:
    """Write ``run`` under ``logging_dir`` (replacing an earlier import of the same source run).

    ``known``: :func:`imported_runs` of ``logging_dir``, read once by a caller importing many runs (and
    kept up to date here); without it the folder is searched.
    """
    root = Path(logging_dir)
    if known is None:
        known = imported_runs(root)
    earlier = known.get((run.backend, run.source_id))
    run_dir = earlier or root / _project_for(run, project) / run_id_for(run)
    result = ImportedRun(run_dir, run.backend, run.source_id, run.location, replaced=earlier is not None)
    building = run_dir.with_name(f".{run_dir.name}.importing")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    project_name, run_id = run_dir.parent.name, run_dir.name
    created = _dt.datetime.fromtimestamp(run.started or time.time(), _dt.timezone.utc).isoformat()
    sink = _Sink(building / JOURNAL_NAME, result)
    try:
        header = {"type": "header", "format": FORMAT, "version": FORMAT_VERSION, "project": project_name}
        header.update(run_id=run_id, source=f"import:{run.backend}", created=created)
        sink.write(header, numbered=False)
        if run.config:
            sink.write({"type": "config", "values": run.config})
        _write_points(sink, run.points)
        _write_media(sink, building, run.media)
        # read after points and media: an importer may list what it skipped while streaming them
        result.not_carried[:0] = run.not_carried
        if run.ended is not None or (run.status or "").lower() in ("finished", "done", "completed", "success"):
            sink.write({"type": "finish"}, numbered=False)
    finally:
        sink.handle.close()
    _write_manifest(building, run, result, project_name, run_id, sink)
    _point_artifacts_at(building, run_dir)
    if earlier is not None:
        _carry_replay_state(earlier, building, result)
        _keep_backend_files(earlier, building)
    _swap_in(building, run_dir)
    known[(run.backend, run.source_id)] = run_dir
    return result


def _write_manifest(folder: Path, run: SourceRun, result: ImportedRun, project: str, run_id: str, sink: _Sink) -> None:
    manifest = RunManifest(
        folder,
        project,
        run_id,
        last_step=sink.last_step,
        last_seq=sink.seq,
        started=_finite(run.started) or time.time(),
        extra={
            "imported_from": {
                "backend": run.backend,
                "source_id": run.source_id,
                "location": run.location,
                "imported_at": time.time(),
                "name": run.name,
                "project": run.project,
                "status": run.status,
                "tags": run.tags,
                "not_carried": result.not_carried,
            },
            "status": "finished" if run.ended is not None else (run.status or "imported"),
        },
    )
    if run.ended is not None:
        manifest.extra["ended"] = run.ended
    manifest.write()


def _swap_in(building: Path, run_dir: Path) -> None:
    """Replace the run folder with the one just built (a rename each way: never half of both)."""
    if run_dir.exists():
        old = run_dir.with_name(f".{run_dir.name}.replaced")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(run_dir, old)
        os.replace(building, run_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(building, run_dir)


def _point_artifacts_at(building: Path, run_dir: Path) -> None:
    """Artifact records name absolute paths: point them from the building folder to the final one."""
    journal = building / JOURNAL_NAME
    text = journal.read_text(encoding="utf-8")
    old, new = json.dumps(str(building.resolve()))[1:-1], json.dumps(str(run_dir.resolve()))[1:-1]
    if old in text:
        journal.write_text(text.replace(old, new), encoding="utf-8")


#: what an import writes in a run folder; everything else there was written by a replay's backends
_IMPORT_WRITES = frozenset((JOURNAL_NAME, MANIFEST_NAME, "media", "artifacts"))


def _keep_backend_files(earlier: Path, building: Path) -> None:
    """Move what replays wrote into the run folder (TensorBoard's event files, DVCLive's folder, spill
    journals, cursors) into the rebuilt one: a re-import replaces the import's files, never a backend's."""
    for entry in earlier.iterdir():
        if entry.name not in _IMPORT_WRITES and not (building / entry.name).exists():
            os.replace(entry, building / entry.name)


def _replayed_prefix_unchanged(old: Path, new: Path, cursor: int) -> bool:
    """Whether ``new`` starts with the lines of ``old`` up to the record numbered ``cursor``."""
    mark = f'"seq":{cursor}'.encode()
    with open(old, "rb") as before, open(new, "rb") as after:
        for line in before:
            if after.readline() != line:
                return False
            if mark + b"}" in line or mark + b"," in line:
                return True
    return cursor <= 0


def _carry_replay_state(earlier: Path, building: Path, result: ImportedRun) -> None:
    """Keep what earlier replays of this run delivered (``run.json``'s backends and cursors) when the records
    they delivered are unchanged, so replaying after a re-import sends only what is new. When the source
    changed under them, the state is dropped: the next replay starts new runs in the backends."""
    try:
        before = json.loads((earlier / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    backends, progress = before.get("backends") or {}, before.get("progress") or {}
    if not backends and not progress:
        return
    cursor = max((int(entry.get("seq", -1)) for entry in progress.values() if isinstance(entry, dict)), default=-1)
    if not _replayed_prefix_unchanged(earlier / JOURNAL_NAME, building / JOURNAL_NAME, cursor):
        result.not_carried.append(
            "replay state: the source changed since the runs replayed from this import, so the next "
            f"replay starts new runs in {', '.join(sorted(backends)) or 'its backends'}"
        )
        return
    manifest = building / MANIFEST_NAME
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data.update(backends=backends, progress=progress)
    manifest.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
