"""``tracking show``: what one or more journals hold, as text (and a plot when matplotlib is installed).

Per run: the header, a table of every metric (points, steps, last, min, max), the first rows of each
logged table and the files of each logged image and figure. With ``plot=``, one PNG overlays the runs:
one panel per metric with a line per run, then a grid with the last image of each key of each run.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store.journal import JournalSummary, read_journal
from ..store.rewind import current_entries
from .tabular import format_table

#: Most metric panels and image thumbnails one plot holds; the text output lists everything.
MAX_PANELS = 24
MAX_THUMBNAILS = 16


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    text = str(value)
    return text if len(text) <= 24 else text[:21] + "..."


@dataclass
class RunMedia:
    """The tables, images and figures a journal lists (paths absolute: the journal stores them relative)."""

    tables: list[dict[str, Any]] = field(default_factory=list)
    images: list[tuple[str, Any, Path]] = field(default_factory=list)  # (key, step, file)
    figures: list[tuple[str, Any, Path]] = field(default_factory=list)


def read_media(summary: JournalSummary) -> RunMedia:
    media = RunMedia()
    folder = summary.path.parent
    for record in current_entries(list(read_journal(summary.path))):  # without what a rewind superseded
        kind = record["type"]
        if kind == "table":
            media.tables.append(record)
        elif kind == "images":
            for key, paths in (record.get("images") or {}).items():
                media.images += [(key, record.get("step"), folder / path) for path in paths]
        elif kind == "figure" and record.get("path"):
            media.figures.append((record.get("name", "figure"), record.get("step"), folder / record["path"]))
    return media


def _label(summary: JournalSummary) -> str:
    return f"{summary.header.get('project')}/{summary.header.get('run_id')}"


def _metrics_table(summary: JournalSummary) -> list[str]:
    rows: list[tuple[str, ...]] = [("key", "points", "steps", "last", "min", "max")]
    for key in sorted(summary.metrics):
        points = summary.metrics[key]
        numbers = [v for _, v in points if isinstance(v, (int, float)) and not isinstance(v, bool)]
        finite = [v for v in numbers if math.isfinite(v)]
        steps = [s for s, _ in points if s is not None]
        rows.append(
            (
                key,
                str(len(points)),
                f"{min(steps)}..{max(steps)}" if steps else "-",
                _fmt(points[-1][1]),
                _fmt(min(finite)) if finite else "-",
                _fmt(max(finite)) if finite else "-",
            )
        )
    return ["", format_table(rows)] if len(rows) > 1 else []


def _table_previews(media: RunMedia, rows: int) -> list[str]:
    lines = []
    for table in media.tables:
        data = table.get("data") or []
        columns = table.get("columns") or [f"col{i}" for i in range(max((len(r) for r in data), default=0))]
        lines += [
            "",
            f"table {table.get('name')!r} at step {table.get('step')}: {len(data)} rows x {len(columns)} columns",
        ]
        if columns and rows > 0:
            shown = [[_fmt(cell) for cell in row] + [""] * (len(columns) - len(row)) for row in data[:rows]]
            lines.append(format_table([[str(c) for c in columns], *shown]))
            if len(data) > rows:
                lines.append(f"... {len(data) - rows} more rows")
    return lines


def _file_list(title: str, entries: list[tuple[str, Any, Path]]) -> list[str]:
    if not entries:
        return []
    rows = [("key", "step", "file")] + [(key, str(step), _display_path(path)) for key, step, path in entries]
    return ["", f"{title} ({len(entries)})", format_table(rows)]


def _display_path(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


def describe(summary: JournalSummary, media: RunMedia, rows: int = 5) -> str:
    header = summary.header
    lines = [
        f"journal  {summary.path}",
        f"project  {header.get('project')}   run {header.get('run_id')}   source {header.get('source')}   "
        f"format v{header.get('version')}   {'finished' if summary.finished else 'not finished (killed or still running)'}",
        "records  " + ", ".join(f"{kind} {count}" for kind, count in sorted(summary.counts.items())),
    ]
    if summary.superseded:
        lines.append(
            f"rewound  {summary.counts.get('rewind', 0)} time(s): {summary.superseded} points logged before it "
            "from its step on are superseded (not in the table)"
        )
    if summary.config:
        lines.append(f"config   {len(summary.config)} top-level keys: {', '.join(sorted(summary.config)[:8])}")
    lines += _metrics_table(summary)
    lines += _table_previews(media, rows)
    lines += _file_list("images", media.images)
    lines += _file_list("figures", media.figures)
    return "\n".join(lines)


class PlotSkipped(RuntimeError):
    """The plot asked for was not drawn (no matplotlib, or nothing to draw); ``summary`` is the text part."""

    def __init__(self, reason: str, summary: str) -> None:
        super().__init__(reason)
        self.summary = summary


def show(
    journals: str | os.PathLike[str] | list[str | os.PathLike[str]],
    plot: str | os.PathLike[str] | None = None,
    rows: int = 5,
) -> str:
    """The text ``tracking show`` prints for one journal (or run folder) or several; ``plot`` also writes a PNG.

    Raises :class:`PlotSkipped` (with the text) when ``plot`` was asked for and could not be drawn, so a
    script never takes a missing PNG for a written one.
    """
    paths = [journals] if isinstance(journals, (str, os.PathLike)) else list(journals)
    runs = [JournalSummary(path) for path in paths]
    medias = [read_media(summary) for summary in runs]
    parts = [describe(summary, media, rows) for summary, media in zip(runs, medias)]
    text = ("\n\n" + "=" * 80 + "\n\n").join(parts)
    if plot:
        text += "\n\n" + _plot(runs, medias, Path(plot), text)
    return text


def _numeric(summary: JournalSummary) -> dict[str, list[tuple[int, float]]]:
    series = {
        key: [(s, v) for s, v in points if isinstance(v, (int, float)) and not isinstance(v, bool) and s is not None]
        for key, points in summary.metrics.items()
    }
    return {key: points for key, points in series.items() if points}


def _plot(runs: list[JournalSummary], medias: list[RunMedia], path: Path, text: str) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.image
        import matplotlib.pyplot as plt
    except ImportError:
        reason = f"no plot written to {path}: matplotlib is not installed (pip install matplotlib)"
        raise PlotSkipped(reason, text) from None
    series = [_numeric(summary) for summary in runs]
    keys = sorted(set().union(*series))
    thumbnails = [
        (f"{summary.header.get('run_id')}\n{key}" if len(runs) > 1 else key, step, file)
        for summary, media in zip(runs, medias)
        for key, step, file in _last_per_key(media.images)
        if file.suffix.lower() == ".png" and file.is_file()
    ][:MAX_THUMBNAILS]
    if not keys and not thumbnails:
        raise PlotSkipped(f"no plot written to {path}: the run has no numeric metrics and no images", text)
    panels = keys[:MAX_PANELS]
    columns = 2 if len(panels) > 1 else 1
    metric_rows = math.ceil(len(panels) / columns)
    thumb_columns = 4
    thumb_rows = math.ceil(len(thumbnails) / thumb_columns)
    figure = plt.figure(figsize=(11, 2.6 * metric_rows + 2.4 * thumb_rows))
    grid = figure.add_gridspec(metric_rows + thumb_rows, columns * thumb_columns)
    span = thumb_columns
    for index, key in enumerate(panels):
        axis = figure.add_subplot(grid[index // columns, (index % columns) * span : (index % columns + 1) * span])
        for summary, points in zip(runs, series):
            if key in points:
                axis.plot([s for s, _ in points[key]], [v for _, v in points[key]], label=_label(summary))
        axis.set_title(key, fontsize=9)
        axis.grid(alpha=0.3)
        if len(runs) > 1 and index == 0:
            axis.legend(fontsize=7)
    cell = columns  # grid columns per thumbnail: four thumbnails a row
    for index, (label, step, file) in enumerate(thumbnails):
        row, column = metric_rows + index // thumb_columns, (index % thumb_columns) * cell
        axis = figure.add_subplot(grid[row, column : column + cell])
        axis.imshow(matplotlib.image.imread(file))
        axis.set_title(f"{label} @ step {step}", fontsize=7)
        axis.axis("off")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    omitted = len(keys) - len(panels)
    return f"plot written to {path}" + (f" ({omitted} more metrics not plotted)" if omitted else "")


def _last_per_key(images: list[tuple[str, Any, Path]]) -> list[tuple[str, Any, Path]]:
    """The last image logged under each key (the first of its list), in the order keys first appeared."""
    last: dict[str, tuple[str, Any, Path]] = {}
    for key, step, file in images:
        if key not in last or last[key][1] != step:
            last[key] = (key, step, file)
    return list(last.values())
