"""Import ClearML tasks from offline sessions (the folder ``Task.close()`` leaves, or its zip).

ClearML can only upload an offline session to a server; this reads its files as
:class:`tracking_clearml.reader.OfflineSession` does: ``task.json`` (name, project, tags, hyperparameters,
configuration objects), ``metrics.jsonl`` (each line a JSON list of events with millisecond timestamps)
streamed line by line, and the debug images' files. Scalars become points, keyed from their title and
series by this backend's naming rule (:func:`tracking_clearml.naming.key_of`, exact for runs this library
wrote); debug images and table plots become media. The config is this library's exact JSON configuration
object where the session has one, else the hyperparameters, typed back by ClearML's own ``type`` and
nested again at ``/``. Sessions are only read.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

from .naming import KEY_MAP_OBJECT, key_of
from .reader import SINGLE_VALUE_ITERATION, OfflineSession

__all__ = ["read_runs"]

_READ_ERRORS = (ValueError, KeyError, TypeError, zipfile.BadZipFile, OSError, EOFError, zlib.error)
_TYPES: dict[str, Any] = {"int": int, "float": float, "str": str}


def _open_member(session: OfflineSession, name: str) -> IO[bytes] | None:
    if session.path.is_dir():
        file = session.path / name
        return open(file, "rb") if file.is_file() else None
    archive = zipfile.ZipFile(session.path)
    if name not in archive.namelist():
        archive.close()
        return None
    return archive.open(name)  # the archive closes with the member (it holds the only reference)


def _events(session: OfflineSession) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, event)`` of ``metrics.jsonl``; a line that is not a JSON list raises ``ValueError``."""
    member = _open_member(session, "metrics.jsonl")
    if member is None:
        return
    with member:
        for number, line in enumerate(member, 1):
            if line.strip():
                events = json.loads(line)
                if not isinstance(events, list):
                    raise ValueError("not a JSON list of events")
                for event in events:
                    yield number, event


def _seconds(milliseconds: Any) -> float | None:
    try:
        return int(milliseconds) / 1000
    except (TypeError, ValueError):
        return None


def _typed(item: dict[str, Any]) -> Any:
    value, kind = item.get("value"), item.get("type")
    if kind == "bool" and value in ("True", "False", "true", "false"):
        return value in ("True", "true")
    if kind in _TYPES:
        try:
            return _TYPES[kind](value)
        except (TypeError, ValueError):
            return value
    return value


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for name, value in flat.items():
        *parents, leaf = name.split("/")
        target = nested
        for parent in parents:
            child = target.setdefault(parent, {})
            if not isinstance(child, dict):
                nested[name] = value
                break
            target = child
        else:
            target[leaf] = value
    return nested


def _config(session: OfflineSession, not_carried: list[str]) -> dict[str, Any]:
    task = session.task
    objects = task.get("configuration") or {}
    for name in sorted(objects):
        if name not in ("General", KEY_MAP_OBJECT):
            not_carried.append(f"configuration object {name!r}")
    exact = objects.get("General")
    if isinstance(exact, dict) and exact.get("type") == "json":
        config: dict[str, Any] = json.loads(exact["value"])
        return config
    sections = {
        section: _nested({name: _typed(item) for name, item in items.items()})
        for section, items in (task.get("hyperparams") or {}).items()
    }
    if set(sections) <= {"General"}:
        return sections.get("General", {})
    return sections


def _table(plot: dict[str, Any]) -> dict[str, Any] | None:
    data = (plot.get("data") or [{}])[0]
    if data.get("type") != "table":
        return None
    headers = [h[0] if isinstance(h, list) and len(h) == 1 else h for h in data["header"]["values"]]
    return {"columns": headers, "data": [list(row) for row in zip(*data["cells"]["values"])]}


@dataclass
class _Scan:
    media: list[Media] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    scalars: int = 0
    last_step: int | None = None
    first_time: float | None = None
    last_time: float | None = None
    damage: str | None = None
    damaged_line: int | None = None

    def drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1


def _scan(session: OfflineSession, keys: dict[tuple[str, str], str]) -> _Scan:
    scan = _Scan()
    images: list[tuple[str, int, str, float | None]] = []
    read = 0
    try:
        for number, event in _events(session):
            read = number
            kind, time = event.get("type"), _seconds(event.get("timestamp"))
            if time is not None:
                scan.first_time = time if scan.first_time is None else min(scan.first_time, time)
                scan.last_time = time if scan.last_time is None else max(scan.last_time, time)
            if kind == "training_stats_scalar":
                if int(event["iter"]) == SINGLE_VALUE_ITERATION:
                    scan.drop(f"single value {event.get('variant')!r}")
                else:
                    scan.scalars += 1
                    scan.last_step = int(event["iter"])
            elif kind == "training_debug_image":
                title, variant = event["metric"], event["variant"]
                series, _, index = variant.rpartition("/")
                if not (series and index.isdigit()) or (title, variant) in keys:
                    series = variant
                images.append((key_of(title, series, keys), int(event["iter"]), event.get("url", ""), time))
            elif kind == "plot":
                key = key_of(event["metric"], event["variant"], keys)
                table = _table(json.loads(event["plot_str"]))
                if table is None:
                    scan.drop(f"plots ({key})")
                else:
                    scan.media.append(Media("table", key, int(event["iter"]), table, time))
            else:
                scan.drop(f"{kind} events")
    except _READ_ERRORS as error:
        scan.damage = f"metrics.jsonl line {read + 1} cannot be read ({type(error).__name__}: {error})"
        scan.damaged_line = read + 1
    last_use = {url: position for position, (_, _, url, _) in enumerate(images)}
    for position, (key, step, url, time) in enumerate(images):
        data = session.read_file(url) if last_use[url] == position else None
        if data is None:
            scan.drop(f"debug images whose file ClearML reused or did not keep ({key})")
        else:
            scan.media.append(Media("image", key, step, data, time))
    return scan


def _points(session: OfflineSession, keys: dict[tuple[str, str], str], damaged_line: int | None) -> Iterator[Point]:
    try:
        for number, event in _events(session):
            if damaged_line is not None and number >= damaged_line:
                return
            if event.get("type") != "training_stats_scalar" or int(event["iter"]) == SINGLE_VALUE_ITERATION:
                continue
            key = key_of(event["metric"], event["variant"], keys)
            yield Point(key, int(event["iter"]), event["value"], _seconds(event.get("timestamp")))
    except _READ_ERRORS:
        return  # the first pass recorded it


def _sessions(root: Path) -> list[Path]:
    """The sessions under ``root`` (a session folder or zip, or a folder of them), a zip preferred to its folder."""
    if (root / "task.json").is_file() or root.is_file():
        return [root]
    found: dict[str, Path] = {}
    for path in sorted(root.iterdir()):
        if path.is_dir() and (path / "task.json").is_file():
            found.setdefault(path.name, path)
        elif path.suffix == ".zip":
            found[path.stem] = path
    return [found[name] for name in sorted(found)]


def _read(path: Path) -> tuple[SourceRun, _Scan]:
    session = OfflineSession(path)
    try:
        task = session.task
        if not task:
            raise SourceError(str(path), "not a ClearML offline session (no task.json)")
        keys = session.key_map()
    except zipfile.BadZipFile as error:
        raise SourceError(str(path), f"not a zip archive ({error})") from error
    except (ValueError, OSError, zlib.error) as error:
        raise SourceError(str(path), f"task.json cannot be read ({type(error).__name__}: {error})") from error
    not_carried: list[str] = []
    config = _config(session, not_carried)
    scan = _scan(session, keys)
    not_carried[:0] = [f"{what}, {count} time(s)" for what, count in sorted(scan.dropped.items())]
    artifacts = [item.get("key") for item in (task.get("execution") or {}).get("artifacts") or []]
    if artifacts:
        not_carried.append(f"artifacts (stored outside the session): {', '.join(map(str, artifacts))}")
    if task.get("offline_output_models"):
        not_carried.append(f"output models: {len(task['offline_output_models'])}")
    if session.read_text("log.jsonl").strip():
        not_carried.append("the console log (log.jsonl)")
    if scan.damage is not None:
        not_carried.append(f"everything in {path.name} after the damage ({scan.damage})")
    project = task.get("project_name") or None
    tags = {"tags": ",".join(map(str, task["tags"]))} if task.get("tags") else {}
    for name in ("comment", "type"):
        if task.get(name):
            tags[f"task_{name}" if name == "type" else name] = str(task[name])
    run = SourceRun(
        backend="clearml",
        source_id=f"{project or ''}/{task.get('id') or path.name.removesuffix('.zip')}",
        name=task.get("name") or None,
        project=project,
        started=scan.first_time,
        ended=scan.last_time,
        config=config,
        tags=tags,
        points=_points(session, keys, scan.damaged_line),
        media=scan.media,
        not_carried=not_carried,
        location=str(path),
    )
    return run, scan


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Each ClearML offline session in ``source``: a session folder, its zip, or a folder of sessions.

    ``started``/``ended`` are the first and last event times (a session keeps no start or end of its own).
    """
    root = Path(source)
    if not root.exists():
        raise SourceError(source, "no such file or folder")
    sessions = _sessions(root)
    if not sessions:
        raise SourceError(source, "no ClearML offline session (task.json, or a session zip) found")
    for path in sessions:
        run, scan = _read(path)
        yield run
        if scan.damage is not None:
            step = "" if scan.last_step is None else f", up to step {scan.last_step}"
            raise SourceError(str(path), scan.damage, imported=f"{scan.scalars} scalar event(s){step}")
