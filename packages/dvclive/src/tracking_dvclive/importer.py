"""``tracking import dvclive <folder>``: DVCLive folders as journals, read from DVCLive's own files.

A DVCLive folder is one run: ``plots/metrics/<key>.tsv`` (a ``step`` column, the value in a column
named after the key's last part, and a ``timestamp`` column in ms when the metric was logged with
``timestamp=True``), ``params.yaml`` (the config, nesting kept), ``metrics.json`` (latest values:
string values the journal keeps as text points), ``plots/images/`` (``<key>/<step>.png`` per step, or
one ``<name>.png``) and ``artifacts/``. ``<folder>`` may also hold several DVCLive folders (each a run).
Custom and sklearn plots, the report and ``dvc.yaml`` are listed as not carried. DVCLive keeps no run
id: a run is known by its folder's absolute path, so importing the same folder again is idempotent.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

_MARKERS = ("params.yaml", "metrics.json", "plots")
_STEP_IMAGE = re.compile(r"^(\d+)(?:_(\d+))?\.(png|jpe?g)$")


def _is_live_folder(folder: Path) -> bool:
    return (
        (folder / "metrics.json").is_file()
        or (folder / "params.yaml").is_file()
        or (folder / "plots" / "metrics").is_dir()
    )


def _live_folders(root: Path) -> list[Path]:
    if _is_live_folder(root):
        return [root]
    found = {path.parent for marker in ("metrics.json", "params.yaml") for path in root.rglob(marker)}
    found |= {path.parent.parent for path in root.rglob("plots") if (path / "metrics").is_dir()}
    return sorted(folder for folder in found if _is_live_folder(folder))


def _value(cell: str) -> float | int | str:
    """A cell as DVCLive wrote it: a number, or the text this library logs as a metric's string value."""
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        return cell


def _tsv_points(path: Path, key: str) -> list[Point]:
    import io

    points = []
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):  # DVCLive ends every row with a newline: this one was cut off
        whole = text.count("\n")
        raise SourceError(
            str(path), "damaged: its last row is cut off (no newline)", imported=f"{key} up to line {whole}"
        )
    with io.StringIO(text, newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        fields = reader.fieldnames or []
        column = path.stem if path.stem in fields else next((f for f in fields if f not in ("step", "timestamp")), None)
        if "step" not in fields or column is None:
            raise SourceError(str(path), f"not a DVCLive metric file (columns {fields}; expected step and {path.stem})")
        for line, row in enumerate(reader, 2):
            try:
                if row[column] is None or None in row:  # a short row (cut off) or a long one (garbled)
                    raise ValueError(row)
                step, value = int(row["step"]), _value(row[column])
                moment = int(row["timestamp"]) / 1000.0 if row.get("timestamp") else None
            except (TypeError, ValueError):
                raise SourceError(
                    str(path), f"line {line} is damaged: {row}", imported=f"{key} up to line {line - 1}"
                ) from None
            points.append(Point(key, step, value, moment))
    return points


def _params(folder: Path) -> dict[str, Any]:
    path = folder / "params.yaml"
    if not path.is_file():
        return {}
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    except YAMLError as error:
        raise SourceError(str(path), f"not valid YAML: {error}") from None
    return data if isinstance(data, dict) else {}


def _images(folder: Path) -> Iterator[Media]:
    root = folder / "plots" / "images"
    if not root.is_dir():
        return
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        stepped = _STEP_IMAGE.match(path.name)
        if stepped and path.parent != root:
            key = path.parent.relative_to(root).as_posix()
            yield Media("image", key, int(stepped[1]), path.read_bytes(), path.stat().st_mtime)
        else:
            yield Media("image", path.relative_to(root).with_suffix("").as_posix(), None, path.read_bytes())


def _artifacts(folder: Path) -> Iterator[Media]:
    root = folder / "artifacts"
    if root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            yield Media("artifact", path.relative_to(root).as_posix(), None, str(path))


def _read(folder: Path) -> SourceRun:
    metrics_root = folder / "plots" / "metrics"
    points: list[Point] = []
    if metrics_root.is_dir():
        for path in sorted(metrics_root.rglob("*.tsv")):
            points += _tsv_points(path, path.relative_to(metrics_root).with_suffix("").as_posix())
    keys = {point.key for point in points}
    latest: dict[str, Any] = {}
    if (folder / "metrics.json").is_file():
        try:
            latest = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
        except ValueError as error:
            raise SourceError(str(folder / "metrics.json"), f"not valid JSON: {error}") from None
    last_step = latest.get("step")
    step = last_step if isinstance(last_step, int) else 0
    for key, value in _flat(latest).items():  # values with no .tsv (strings): the latest one, as a text point
        if key != "step" and key not in keys and isinstance(value, str):
            points.append(Point(key, step, value, None))
    not_carried = [
        f"{what} ({folder / what})"
        for what in ("plots/custom", "plots/sklearn", "report.html", "report.md")
        if (folder / what).exists()
    ]
    if (folder.parent / "dvc.yaml").is_file():
        not_carried.append(f"dvc.yaml ({folder.parent / 'dvc.yaml'}): DVC's pipeline file, not run data")
    times = [point.time for point in points if point.time is not None]
    is_tracking_layout = folder.name == "dvclive" and folder.parent.parent != folder.parent
    name = folder.parent.name if is_tracking_layout else folder.name
    project = folder.parent.parent.name if is_tracking_layout else folder.parent.name
    media = [*_images(folder), *_artifacts(folder)]
    return SourceRun(
        backend="dvclive",
        source_id=str(folder.resolve()),
        name=name,
        project=project or None,
        started=min(times) if times else None,
        config=_params(folder),
        points=points,
        media=media,
        not_carried=not_carried,
        location=str(folder),
    )


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Yield one run per DVCLive folder at or under ``source``."""
    root = Path(source)
    if not root.is_dir():
        raise SourceError(source, "not a folder (a DVCLive folder holds params.yaml, metrics.json and plots/)")
    folders = _live_folders(root)
    if not folders:
        raise SourceError(source, "no DVCLive folder here (none holds params.yaml, metrics.json or plots/metrics)")
    for folder in folders:
        yield _read(folder)
