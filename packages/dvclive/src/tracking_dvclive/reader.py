"""A DVCLive folder read back as ``dvc plots`` reads it: the ``plots/metrics`` rows and ``plots/images`` files."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

#: an image file DVCLive's step slider shows: ``<step>.png``, or ``<step>_<index>.png`` for a list
IMAGE_FILE = re.compile(r"^(\d+)(?:_(\d+))?\.png$")


def read_history(plots: Path) -> dict[str, list[tuple[int, Any]]]:
    """Every numeric row of ``plots/metrics/*.tsv``, in file order (a step logged twice shows twice);
    DVCLive's ``"nan"``/``"inf"`` read back as floats, text rows are left out."""
    history: dict[str, list[tuple[int, Any]]] = {}
    root = plots / "metrics"
    for path in sorted(root.rglob("*.tsv")) if root.is_dir() else ():
        name = path.relative_to(root).with_suffix("").as_posix()
        with path.open(encoding="utf-8", newline="") as file:
            for row in csv.DictReader(file, delimiter="\t"):
                try:
                    value = float(row[path.stem])
                except (KeyError, TypeError, ValueError):
                    continue
                history.setdefault(name, []).append((int(row["step"]), value))
    return history


def read_images(plots: Path) -> dict[str, list[tuple[int, Any]]]:
    """Every PNG under ``plots/images/<key>/``, per key, as ``(step, HW or HWC uint8 array)``."""
    import numpy as np
    from PIL import Image

    root = plots / "images"
    found: list[tuple[str, int, int, Path]] = []
    for path in root.rglob("*.png") if root.is_dir() else ():
        match = IMAGE_FILE.match(path.name)
        if match:
            key = path.parent.relative_to(root).as_posix()
            found.append((key, int(match.group(1)), int(match.group(2) or 0), path))
    images: dict[str, list[tuple[int, Any]]] = {}
    for key, step, _index, path in sorted(found):
        with Image.open(path) as image:
            images.setdefault(key, []).append((step, np.asarray(image)))
    return images
