"""Import W&B runs from their local folders (``wandb/offline-run-*``, ``wandb/run-*``).

A run folder's ``run-<id>.wandb`` transaction log is its complete local record: history rows, config,
summary, the run's metadata and its end. This reads it with W&B's own protobuf messages, streaming
record by record (the folders of a resumed run, which share the run id, are read as one run, oldest
first), and never writes to the folder. Media (images, tables, histograms) come from the history's
references into ``files/media``; other files the run saved (``requirements.txt``, ``output.log``,
``wandb.save`` files) are carried as artifacts.

``source`` is a run folder, a ``.wandb`` file, or any folder above run folders (``WANDB_DIR``, its
``wandb`` folder). A torn or corrupt transaction log yields the run up to the damage, then raises
:class:`~tracking_core.kit.SourceError` naming the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

from .transaction_log import Damaged, NotALog, iter_records, put_item

__all__ = ["read_runs"]

#: W&B's own files in a run's ``files`` folder: what they hold is carried from the transaction log.
_BOOKKEEPING = {"config.yaml", "wandb-summary.json", "wandb-metadata.json"}
_MEDIA_KINDS = {"image-file": "image", "images/separated": "image", "table-file": "table", "histogram": "histogram"}


def _records(path: Path) -> Iterator[Any]:
    """The log's records, read strictly (:mod:`tracking_wandb.transaction_log`): damage raises ``Damaged``."""
    try:
        yield from iter_records(path, strict=True)
    except NotALog as error:
        raise SourceError(str(path), "not a W&B transaction log (no :W&B header)") from error


def _row(record: Any) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for item in record.history.item:
        put_item(row, item)
    return row


def _top_key(item: Any) -> str:
    return str(item.key or (item.nested_key[0] if item.nested_key else ""))


def _mentions_media(item: Any) -> bool:
    return "_type" in item.nested_key or '"_type"' in item.value_json


@dataclass
class _Scan:
    """What the first pass over a run's logs finds: everything but the scalar points."""

    run: Any = None
    config: dict[str, Any] = field(default_factory=dict)
    summary_keys: set[str] = field(default_factory=set)
    exit: Any = None
    media: list[Media] = field(default_factory=list)
    history_keys: set[str] = field(default_factory=set)
    dropped: dict[str, int] = field(default_factory=dict)  # what history holds that is not carried -> count
    counts: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    last_step: int | None = None
    damage: tuple[Path, str] | None = None

    def drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1


def _media(scan: _Scan, files: Path, key: str, value: dict[str, Any], step: int, time: float | None) -> None:
    kind = value.get("_type")
    if value.get("caption") or value.get("captions"):
        scan.drop(f"image captions ({key})")
    if kind == "image-file":
        scan.media.append(Media("image", key, step, str(files / value["path"]), time))
    elif kind == "images/separated":
        for name in value.get("filenames", []):
            scan.media.append(Media("image", key, step, str(files / name), time))
    elif kind == "table-file":
        try:
            table = json.loads((files / value["path"]).read_text())
        except (OSError, ValueError) as error:
            scan.drop(f"table {key!r} (its file {value.get('path')} cannot be read: {error})")
            return
        scan.media.append(Media("table", key, step, {"columns": table["columns"], "data": table["data"]}, time))
    elif kind == "histogram":
        data = {"counts": value.get("values", []), "edges": value.get("bins", [])}
        scan.media.append(Media("histogram", key, step, data, time))
    else:
        scan.drop(f"history values of W&B type {kind!r} ({key})")


def _flat(row: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """A history row's values by key, nested dicts (not media) flattened with ``.`` as W&B shows them."""
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and "_type" not in value:
            yield from _flat(value, name + ".")
        else:
            yield name, value


def _scan_history(scan: _Scan, record: Any, files: Path) -> None:
    step = record.history.step.num
    scan.rows += 1
    scan.last_step = step
    for item in record.history.item:
        top = _top_key(item)
        if not top.startswith("_"):
            scan.history_keys.add(top)
    if not any(_mentions_media(item) or item.value_json.startswith("[") for item in record.history.item):
        return
    row = _row(record)
    time = row.get("_timestamp")
    for key, value in _flat(row):
        if key.startswith("_"):
            continue
        if isinstance(value, dict):
            _media(scan, files, key, value, step, time)
        elif isinstance(value, list):
            scan.drop(f"list values in history ({key})")


def _scan(logs: list[Path]) -> _Scan:
    scan = _Scan()
    for log in logs:
        files = log.parent / "files"
        try:
            for record in _records(log):
                kind = record.WhichOneof("record_type")
                scan.counts[kind] = scan.counts.get(kind, 0) + 1
                if kind == "history":
                    _scan_history(scan, record, files)
                elif kind == "run":
                    scan.run = record.run
                    for item in record.run.config.update:
                        put_item(scan.config, item)
                elif kind == "config":
                    for item in record.config.update:
                        put_item(scan.config, item)
                    for item in record.config.remove:
                        scan.config.pop(item.key, None)
                elif kind == "summary":  # W&B rewrites it every step: only its keys are needed, not decoded
                    scan.summary_keys.update(_top_key(item) for item in record.summary.update)
                elif kind == "exit":
                    scan.exit = record.exit
                elif kind == "artifact" and record.artifact.type != "run_table":  # run_table: a logged table's copy
                    scan.drop(f"artifact {record.artifact.name!r} of type {record.artifact.type!r}")
        except Damaged as error:
            scan.damage = (log, str(error))
            return scan
    return scan


def _values(record: Any) -> tuple[float | None, Iterable[tuple[str, Any]]]:
    """A history record's time and its values by key; W&B's own ``_runtime``/``_step`` are not decoded."""
    items = record.history.item
    if any(len(item.nested_key) > 1 for item in items):  # nested values or media: the whole row, flattened
        row = _row(record)
        return row.get("_timestamp"), list(_flat(row))
    time: float | None = None
    values: list[tuple[str, Any]] = []
    for item in items:
        key = _top_key(item)
        if key == "_timestamp":
            time = json.loads(item.value_json)
        elif not key.startswith("_"):
            value = json.loads(item.value_json)
            values.extend(_flat({key: value}) if isinstance(value, dict) else [(key, value)])
    return time, values


def _points(logs: list[Path], damaged: Path | None) -> Iterator[Point]:
    for log in logs:
        try:
            for record in _records(log):
                if record.WhichOneof("record_type") != "history":
                    continue
                step = record.history.step.num
                time, values = _values(record)
                for key, value in values:
                    if key.startswith("_") or value is None:
                        continue
                    if isinstance(value, bool):
                        yield Point(key, step, int(value), time)
                    elif isinstance(value, (int, float, str)):
                        yield Point(key, step, value, time)
        except Damaged:
            return  # the first pass recorded it; the run is yielded up to there, then the import fails
        if log == damaged:
            return


def _artifacts(logs: list[Path]) -> Iterator[Media]:
    """Files the run saved besides its media and W&B's bookkeeping, the last part's copy winning."""
    found: dict[str, Path] = {}
    for log in logs:
        files = log.parent / "files"
        for folder, _dirs, names in os.walk(files):
            for name in names:
                path = Path(folder) / name
                relative = path.relative_to(files).as_posix()
                if relative in _BOOKKEEPING or relative.startswith("media/"):
                    continue
                found[relative] = path
    for relative, path in sorted(found.items()):
        yield Media("artifact", relative, None, str(path))


def _not_carried(scan: _Scan) -> list[str]:
    notes = [f"{what}, {count} time(s)" for what, count in sorted(scan.dropped.items())]
    summary_only = sorted(key for key in scan.summary_keys if not key.startswith("_") and key not in scan.history_keys)
    if summary_only:
        notes.append(f"summary values set apart from the history: {', '.join(summary_only)}")
    if scan.counts.get("stats"):
        notes.append(f"system metrics: {scan.counts['stats']} sample record(s)")
    outputs = scan.counts.get("output", 0) + scan.counts.get("output_raw", 0)
    if outputs:
        notes.append(f"console output records: {outputs} (output.log, where W&B wrote one, is carried as a file)")
    if scan.counts.get("use_artifact"):
        notes.append(f"artifacts the run used: {scan.counts['use_artifact']}")
    if scan.counts.get("alert"):
        notes.append(f"alerts: {scan.counts['alert']}")
    if scan.counts.get("metric"):
        notes.append(f"metric definitions (define_metric): {scan.counts['metric']}")
    if scan.counts.get("tbrecord"):
        notes.append(f"TensorBoard sync records: {scan.counts['tbrecord']}")
    if scan.damage is not None:
        notes.append(f"everything in {scan.damage[0].name} after the damage ({scan.damage[1]})")
    return notes


def _tags(run: Any) -> dict[str, str]:
    tags: dict[str, str] = {}
    for name, value in (("group", run.run_group), ("job_type", run.job_type), ("notes", run.notes)):
        if value:
            tags[name] = value
    if run.tags:
        tags["tags"] = ",".join(run.tags)
    if run.entity:
        tags["entity"] = run.entity
    return tags


def _status(scan: _Scan) -> str:
    if scan.exit is None:
        return "crashed" if scan.damage is None else "damaged"
    return "finished" if scan.exit.exit_code == 0 else "failed"


def _run_logs(root: Path) -> dict[str, list[Path]]:
    """The transaction logs under ``root`` by run id, each run's parts oldest first (folder names are timestamped)."""
    if root.is_file():
        logs = [root]
    else:
        logs = []
        for folder, dirs, names in os.walk(root):  # symlinks (``latest-run``) are not followed
            dirs.sort()
            logs.extend(Path(folder) / name for name in names if name.startswith("run-") and name.endswith(".wandb"))
    runs: dict[str, list[Path]] = {}
    for log in sorted(logs, key=lambda path: path.parent.name):
        runs.setdefault(log.name[len("run-") : -len(".wandb")], []).append(log)
    return runs


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Each W&B run under ``source`` (a run folder, a ``.wandb`` file, or a folder above run folders)."""
    root = Path(source)
    if not root.exists():
        raise SourceError(source, "no such file or folder")
    runs = _run_logs(root)
    if not runs:
        raise SourceError(source, "no W&B run folder (run-*.wandb) found")
    for run_id, logs in runs.items():
        if not any(log.stat().st_size for log in logs):
            raise SourceError(str(logs[-1]), "the transaction log is empty (the run wrote nothing yet)")
        scan = _scan(logs)
        if scan.run is None:
            if scan.damage is not None:
                raise SourceError(str(scan.damage[0]), scan.damage[1], imported="nothing of this run")
            raise SourceError(str(logs[-1]), "the transaction log has no run record")
        run = scan.run
        started = run.start_time.ToMicroseconds() / 1e6 if run.HasField("start_time") else None
        ended = started + scan.exit.runtime if started is not None and scan.exit is not None else None
        yield SourceRun(
            backend="wandb",
            source_id=f"{run.project}/{run.run_id or run_id}",
            name=run.display_name or None,
            project=run.project or None,
            started=started,
            ended=ended,
            status=_status(scan),
            config={key: value for key, value in scan.config.items() if key != "_wandb"},
            tags=_tags(run),
            points=_points(logs, scan.damage[0] if scan.damage else None),
            media=[*scan.media, *_artifacts(logs)],
            not_carried=_not_carried(scan),
            location=str(logs[-1].parent),
        )
        if scan.damage is not None:
            step = "" if scan.last_step is None else f", up to step {scan.last_step}"
            raise SourceError(
                str(scan.damage[0]),
                scan.damage[1],
                imported=f"run {run_id}: {scan.rows} history row(s){step}",
            )
