"""Rewinding a DVCLive folder to a step: its files are plain, so the rows and images from that step on go."""

from __future__ import annotations

import os
from pathlib import Path

from .reader import IMAGE_FILE
from .rows import is_sample_file


def rewind_files(plots: Path, step: int) -> tuple[int, int]:
    """Remove the rows at ``step`` or later from each ``plots/metrics`` ``.tsv`` (system samples, which are
    not at steps, stay) and the images from ``step`` on; how many rows and images went."""
    rows = images = 0
    for path in sorted((plots / "metrics").rglob("*.tsv")) if (plots / "metrics").is_dir() else ():
        if not is_sample_file(path.relative_to(plots / "metrics").as_posix()):  # samples: not at steps
            rows += cut_rows(path, step)
    for path in list((plots / "images").rglob("*.png")) if (plots / "images").is_dir() else ():
        match = IMAGE_FILE.match(path.name)
        if match and int(match.group(1)) >= step:
            path.unlink()
            images += 1
    return rows, images


def cut_rows(path: Path, step: int) -> int:
    """Rewrite a DVCLive ``.tsv`` without its rows at ``step`` or later (atomically); how many went."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if not lines:
        return 0
    try:
        column = lines[0].rstrip("\r\n").split("\t").index("step")
    except ValueError:
        return 0
    kept = [lines[0]]
    for line in lines[1:]:
        fields = line.rstrip("\r\n").split("\t")
        try:
            if int(fields[column]) >= step:
                continue
        except (IndexError, ValueError):
            pass
        kept.append(line)
    if len(kept) < len(lines):
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text("".join(kept), encoding="utf-8")
        os.replace(temporary, path)
    return len(lines) - len(kept)
