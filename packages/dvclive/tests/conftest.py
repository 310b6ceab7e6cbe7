"""Read a DVCLive folder back from DVCLive's own files, as ``dvc plots`` and ``dvc metrics`` read them:
``plots/metrics/<key>.tsv`` (a ``step`` column and one named after the key's last part), ``metrics.json``,
``params.yaml`` (with ruamel.yaml, DVCLive's YAML library) and ``plots/images/``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest


def tsv_rows(folder: str | Path) -> dict[str, list[tuple[int, str]]]:
    """``{key: [(step, cell), ...]}`` of every metric file, rows in file order, cells as written."""
    root = Path(folder) / "plots" / "metrics"
    rows: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(root.rglob("*.tsv")):
        with path.open(encoding="utf-8", newline="") as file:
            reader = csv.DictReader(file, delimiter="\t")
            assert reader.fieldnames is not None and "step" in reader.fieldnames, reader.fieldnames
            key = path.relative_to(root).with_suffix("").as_posix()
            rows[key] = [(int(row["step"]), row[path.stem]) for row in reader]
    return rows


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def scalars(folder: str | Path) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for key, rows in tsv_rows(folder).items():
        numbers = {step: _number(cell) for step, cell in rows}
        if all(value is not None for value in numbers.values()):
            out[key] = numbers  # type: ignore[assignment]
    return out


def texts(folder: str | Path) -> dict[str, dict[int, str]]:
    return {key: dict(rows) for key, rows in tsv_rows(folder).items() if any(_number(cell) is None for _, cell in rows)}


def summary(folder: str | Path) -> dict[str, Any]:
    return json.loads((Path(folder) / "metrics.json").read_text(encoding="utf-8"))


def params(folder: str | Path) -> dict[str, Any]:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load((Path(folder) / "params.yaml").read_text(encoding="utf-8"))


def image_files(folder: str | Path) -> dict[str, list[str]]:
    """``{key folder: [file names]}`` under ``plots/images``."""
    root = Path(folder) / "plots" / "images"
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.png")):
        found.setdefault(path.parent.relative_to(root).as_posix(), []).append(path.name)
    return found


class DVCLiveFiles:
    """The readers above, handed to tests by the ``dvclive_files`` fixture."""

    tsv_rows = staticmethod(tsv_rows)
    scalars = staticmethod(scalars)
    texts = staticmethod(texts)
    summary = staticmethod(summary)
    params = staticmethod(params)
    image_files = staticmethod(image_files)


@pytest.fixture
def dvclive_files() -> type[DVCLiveFiles]:
    return DVCLiveFiles
