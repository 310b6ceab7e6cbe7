"""Import Comet experiments from offline archives (the ``<experiment key>.zip`` files ``comet upload`` sends).

An archive holds ``experiment.json`` (project, start and stop, tags) and ``messages.json`` (one JSON
message per line, in logging order) next to the files the messages upload. Comet ships no reader for it
(only the uploader), so the documented layout is read as :mod:`tracking_comet_ml.reader` reads it, and
Comet's own ``Histogram`` decodes its histograms. Metric messages (step, value, epoch, the client's
millisecond timestamp) become points; parameters the config (``a|b`` names nested again where Comet
flattened a nested config); "others" tags; images, texts and histograms media; uploaded assets artifacts.
Several archives of one experiment (a resumed offline run) are read as one run, oldest part first.
The archives are only read; assets are extracted to a temporary folder (removed at exit) for the journal to copy.
"""

from __future__ import annotations

import json
import math
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

__all__ = ["read_runs"]

_NUMBER_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
#: Comet's own "others": what they say is carried elsewhere (the name) or is about Comet itself.
_OWN_OTHERS = {"Name", "offline_experiment", "hasNestedParams"}
#: Folders the archives' assets are extracted to: an artifact's path must stay valid after its run was read
#: (a caller may copy it later), so they are removed when the process exits, not when the iterators end.
_EXTRACTED: list[tempfile.TemporaryDirectory[str]] = []


@dataclass
class _Upload:
    kind: str  # "image", "text", "histogram", "artifact"
    key: str
    step: int | None
    member: str
    time: float | None


@dataclass
class _Part:
    """What the first pass over one archive finds: everything but the points."""

    path: Path
    meta: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)
    others: dict[str, Any] = field(default_factory=dict)
    uploads: list[_Upload] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    epochs: set[str] = field(default_factory=set)
    metrics: int = 0
    last_step: int | None = None
    damage: str | None = None
    damaged_line: int | None = None

    def drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1


def _open(path: Path) -> tuple[zipfile.ZipFile, dict[str, Any]]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise SourceError(str(path), f"not a zip archive ({error})") from error
    try:
        meta = json.loads(archive.read("experiment.json"))
    except KeyError:
        archive.close()
        raise SourceError(str(path), "not a Comet offline archive (no experiment.json)") from None
    except (zipfile.BadZipFile, OSError, ValueError, zlib.error) as error:
        archive.close()
        raise SourceError(str(path), f"experiment.json cannot be read ({error})") from error
    return archive, meta


def _messages(archive: zipfile.ZipFile) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, message)`` of ``messages.json``; a line that is not JSON raises ``ValueError``."""
    with archive.open("messages.json") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError("not a JSON object")
                yield number, message


def _seconds(milliseconds: Any) -> float | None:
    return milliseconds / 1000 if isinstance(milliseconds, (int, float)) and milliseconds else None


def _value(value: Any) -> Any:
    return _NUMBER_WORDS.get(value, value) if isinstance(value, str) else value


def _scan_upload(part: _Part, payload: dict[str, Any], members: set[str]) -> None:
    kind = payload.get("upload_type")
    params = payload.get("additional_params") or {}
    member = payload.get("file_path")
    step, time = params.get("step"), _seconds(payload.get("local_timestamp"))
    if member not in members:
        part.drop(f"{kind} uploads whose file is not in the archive")
        return
    if kind == "visualization":
        key = (payload.get("metadata") or {}).get("key") or params.get("figName") or params.get("fileName")
        part.uploads.append(_Upload("image", str(key), step, member, time))
    elif kind == "text-sample":
        part.uploads.append(_Upload("text", "text", step, member, time))
    elif kind == "histogram3d":
        part.uploads.append(_Upload("histogram", str(params.get("fileName") or "histogram"), step, member, time))
    elif kind == "asset":
        part.uploads.append(_Upload("artifact", str(params.get("fileName") or member), step, member, time))
    else:
        part.drop(f"{kind} uploads")


#: The parameters Comet itself keeps for ``set_step``/``set_epoch``, not part of the run's config.
_COUNTERS = ("curr_step", "curr_epoch")


def _scan_parameter(part: _Part, payload: dict[str, Any]) -> None:
    param = payload.get("param") or payload.get("params") or {}
    name = param.get("paramName")
    if name is None:
        return
    if param.get("source") == "auto-logged":
        part.drop(f"Comet's auto-logged parameter {name!r}")
    elif name in _COUNTERS:  # what set_step/set_epoch record (as "manual" parameters): the points keep their steps
        part.drop(f"Comet's {name} parameter (the step or epoch counter)")
    else:
        part.params[name] = _value(param.get("paramValue"))


def _scan(path: Path, meta: dict[str, Any]) -> _Part:
    archive, _meta = _open(path)
    part = _Part(path, meta)
    with archive:
        members = set(archive.namelist())
        if "messages.json" not in members:
            raise SourceError(str(path), "not a Comet offline archive (no messages.json)")
        read = 0  # the last line read whole
        try:
            for number, message in _messages(archive):
                read = number
                kind, payload = message.get("type"), message.get("payload") or {}
                if kind == "metric_msg":
                    metric = payload.get("metric") or {}
                    part.metrics += 1
                    part.last_step = metric.get("step")
                    if metric.get("epoch") is not None:
                        part.epochs.add(str(metric.get("metricName")))
                elif kind == "parameter_msg":
                    _scan_parameter(part, payload)
                elif kind == "log_other":
                    part.others[str(payload.get("key"))] = payload.get("value")
                elif kind == "file_upload":
                    _scan_upload(part, payload, members)
                else:
                    part.drop(f"{kind} messages")
        except (ValueError, zipfile.BadZipFile, OSError, EOFError, zlib.error) as error:
            part.damage = f"messages.json line {read + 1} cannot be read ({error})"
            part.damaged_line = read + 1
    return part


def _points(parts: list[_Part]) -> Iterator[Point]:
    for part in parts:
        with zipfile.ZipFile(part.path) as archive:
            try:
                for number, message in _messages(archive):
                    if part.damaged_line is not None and number >= part.damaged_line:
                        return
                    if message.get("type") != "metric_msg":
                        continue
                    payload = message.get("payload") or {}
                    metric = payload.get("metric") or {}
                    step = metric.get("step")
                    yield Point(
                        str(metric.get("metricName")),
                        int(step) if step is not None else 0,
                        _value(metric.get("metricValue")),
                        _seconds(payload.get("local_timestamp")),
                    )
            except (ValueError, zipfile.BadZipFile, OSError, EOFError, zlib.error):
                return  # the first pass recorded it
        if part.damage is not None:
            return


def _histogram(raw: bytes) -> dict[str, Any]:
    from comet_ml.data_structure import Histogram

    histogram = Histogram.from_json(json.loads(raw), verbose=False)
    counts, edges = list(histogram.counts), histogram.create_bin_values()
    used = [index for index, count in enumerate(counts) if count]
    if not used:
        return {"counts": [], "edges": []}
    first, last = used[0], used[-1]
    return {"counts": [float(count) for count in counts[first : last + 1]], "edges": edges[first : last + 2]}


def _media(parts: list[_Part], scratch: tempfile.TemporaryDirectory[str]) -> Iterator[Media]:
    for part in parts:
        with zipfile.ZipFile(part.path) as archive:
            for upload in part.uploads:
                try:
                    raw = archive.read(upload.member)
                except (zipfile.BadZipFile, OSError, zlib.error) as error:
                    raise SourceError(str(part.path), f"{upload.member} cannot be read ({error})") from error
                if upload.kind == "image":
                    yield Media("image", upload.key, upload.step, raw, upload.time)
                elif upload.kind == "text":
                    yield Media("text", upload.key, upload.step, raw.decode("utf-8", "replace"), upload.time)
                elif upload.kind == "histogram":
                    yield Media("histogram", upload.key, upload.step, _histogram(raw), upload.time)
                else:
                    target = Path(scratch.name) / part.path.stem / upload.member / Path(upload.key).name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(raw)
                    yield Media("artifact", upload.key, upload.step, str(target), upload.time)


def _nest(params: dict[str, Any]) -> dict[str, Any]:
    """Comet's ``a|b`` names (a nested config it flattened) as nested dicts again."""
    nested: dict[str, Any] = {}
    for name, value in params.items():
        *parents, leaf = name.split("|")
        target = nested
        for parent in parents:
            child = target.setdefault(parent, {})
            if not isinstance(child, dict):
                target = {}
                break
            target = child
        target[leaf] = value
    return nested


def _archives(root: Path) -> dict[str, list[tuple[Path, dict[str, Any]]]]:
    """The archives by experiment, each experiment's parts oldest first (only ``experiment.json`` is read)."""
    paths = [root] if root.is_file() else sorted(root.glob("*.zip"))
    runs: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for path in paths:
        archive, meta = _open(path)
        archive.close()
        runs.setdefault(str(meta.get("offline_id") or path.stem), []).append((path, meta))
    for parts in runs.values():
        parts.sort(key=lambda part: part[1].get("start_time") or 0)
    return runs


def _not_carried(parts: list[_Part]) -> list[str]:
    dropped: dict[str, int] = {}
    for part in parts:
        for what, count in part.dropped.items():
            dropped[what] = dropped.get(what, 0) + count
    notes = [f"{what}, {count} time(s)" for what, count in sorted(dropped.items())]
    epochs = sorted({name for part in parts for name in part.epochs})
    if epochs:
        notes.append(f"the epoch of each point of: {', '.join(epochs)}")
    for part in parts:
        if part.damage is not None:
            notes.append(f"everything in {part.path.name} after the damage ({part.damage})")
    return notes


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Each experiment in ``source``: an offline archive (``.zip``) or a folder of them."""
    root = Path(source)
    if not root.exists():
        raise SourceError(source, "no such file or folder")
    if root.is_dir() and not any(root.glob("*.zip")):
        raise SourceError(source, "no Comet offline archive (*.zip) in this folder")
    scratch = tempfile.TemporaryDirectory(prefix="tracking-comet-import-")
    _EXTRACTED.append(scratch)
    for key, found in _archives(root).items():
        parts = [_scan(path, meta) for path, meta in found]
        meta = parts[-1].meta
        others: dict[str, Any] = {}
        params: dict[str, Any] = {}
        for part in parts:
            others.update(part.others)
            params.update(part.params)
        tags = {name: str(value) for name, value in others.items() if name not in _OWN_OTHERS}
        labels = [str(tag) for part in parts for tag in part.meta.get("tags") or []]
        if labels:
            tags["tags"] = ",".join(dict.fromkeys(labels))
        if meta.get("workspace"):
            tags["workspace"] = str(meta["workspace"])
        project = meta.get("project_name") or None
        yield SourceRun(
            backend="comet_ml",
            source_id=f"{project or ''}/{key}",
            name=str(others["Name"]) if others.get("Name") else None,
            project=project,
            started=_seconds(parts[0].meta.get("start_time")),
            ended=_seconds(meta.get("stop_time")),
            config=_nest(params) if others.get("hasNestedParams") else params,
            tags=tags,
            points=_points(parts),
            media=_media(parts, scratch),
            not_carried=_not_carried(parts),
            location=str(parts[-1].path),
        )
        damaged = next((part for part in parts if part.damage is not None), None)
        if damaged is not None:
            step = "" if damaged.last_step is None else f", up to step {damaged.last_step}"
            raise SourceError(
                str(damaged.path),
                str(damaged.damage),
                imported=f"experiment {key}: {damaged.metrics} metric message(s){step}",
            )
