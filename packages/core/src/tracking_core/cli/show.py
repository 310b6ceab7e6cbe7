"""``tracking show``: what one or more journals hold, as text (and a plot when matplotlib is installed).

Per run: the header, a table of every metric the user logged (points, steps, last, min, max), the first
rows of each logged table and the files of each logged image and figure. With ``plot=``, one PNG
overlays the runs: one panel per metric with a line per run, then a grid with the last image of each
key of each run.

The run's system samples (``system/*``, :mod:`.samples`) are only counted unless ``system=True``: then
they get a table of their own and, in the plot, panels of their own against the seconds since each
run started, never the user's steps.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store.journal import JournalSummary, read_journal
from ..store.rewind import current_entries
from .runs import run_status
from .samples import RunSamples, count_file_samples, is_system, load_samples, run_started
from .tabular import format_table

#: Most metric panels and image thumbnails one plot holds; the text output lists everything.
MAX_PANELS = 24
MAX_SYSTEM_PANELS = 12
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
    for key in sorted(key for key in summary.metrics if not is_system(key)):
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


def samples_of(summary: JournalSummary) -> RunSamples:
    """The run's system samples: its ``system.jsonl``, then the ``system/*`` values its journal holds."""
    journaled = []
    for record in read_journal(summary.path):
        if record["type"] == "metrics":
            sampled = {key: value for key, value in (record.get("values") or {}).items() if is_system(key)}
            if sampled:
                journaled.append((record.get("time"), sampled))
    return load_samples(summary.path.parent, journaled, run_started(summary.path.parent))


def _sample_count(summary: JournalSummary) -> int:
    """How many samples the run has, read cheaply (the line printed when they are not shown)."""
    journaled = max((len(points) for key, points in summary.metrics.items() if is_system(key)), default=0)
    return count_file_samples(summary.path.parent) + journaled


def _samples_table(samples: RunSamples) -> list[str]:
    if not samples.count:
        return ["", "system samples: none"]
    times = {moment for points in samples.series.values() for _, moment, _ in points if moment is not None}
    span = f" over {max(times) - min(times):.0f} s" if len(times) > 1 else ""
    rows: list[tuple[str, ...]] = [("system sample", "samples", "last", "min", "mean", "max")]
    for key in sorted(samples.series):
        stats = samples.stats(key)
        if stats is not None:
            rows.append(
                (key, str(stats["samples"]), _fmt(stats["last"]), _fmt(stats["min"]) if stats["min"] is not None
                 else "-", _fmt(stats["mean"]) if stats["mean"] is not None else "-",
                 _fmt(stats["max"]) if stats["max"] is not None else "-")
            )  # fmt: skip
    return ["", f"system samples ({samples.count}{span}; taken on a clock, not at steps)", format_table(rows)]


def _status(summary: JournalSummary) -> str:
    """The run's status as ``tracking runs`` lists it (run.json's: a run that ended by an exception or Ctrl-C
    still wrote its journal's finish record); the journal's own end where no run.json says it."""
    status = run_status(summary.path.parent)
    if status is not None and status.startswith("running"):
        return f"{status}, not finished"
    if status is not None:
        return status
    return "finished" if summary.finished else "not finished (killed or still running)"


def describe(summary: JournalSummary, media: RunMedia, rows: int = 5, samples: RunSamples | None = None) -> str:
    """The text of one run; ``samples`` (when the system samples were asked for) adds their table."""
    header = summary.header
    lines = [
        f"journal  {summary.path}",
        f"project  {header.get('project')}   run {header.get('run_id')}   source {header.get('source')}   "
        f"format v{header.get('version')}   {_status(summary)}",
        "records  " + ", ".join(f"{kind} {count}" for kind, count in sorted(summary.counts.items())),
    ]
    if isinstance(header.get("after_seq"), int):
        lines.append(
            f"dropped  the journal's segments up to record {header['after_seq']}: every backend held them "
            "(segment_mb); the table starts after them"
        )
    if summary.superseded:
        lines.append(
            f"rewound  {summary.counts.get('rewind', 0)} time(s): {summary.superseded} points logged before it "
            "from its step on are superseded (not in the table)"
        )
    if summary.config:
        lines.append(f"config   {len(summary.config)} top-level keys: {', '.join(sorted(summary.config)[:8])}")
    if samples is None:
        count = _sample_count(summary)
        if count:
            lines.append(
                f"system   {count} sample{'s' if count > 1 else ''}, not shown (tracking show --system lists them)"
            )
    lines += _metrics_table(summary)
    if samples is not None:
        lines += _samples_table(samples)
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
    system: bool = False,
) -> str:
    """The text ``tracking show`` prints for one journal (or run folder) or several; ``plot`` also writes a PNG.

    ``system`` adds the runs' system samples (a table each, and panels of their own in the plot).
    Raises :class:`PlotSkipped` (with the text) when ``plot`` was asked for and could not be drawn, so a
    script never takes a missing PNG for a written one.
    """
    paths = [journals] if isinstance(journals, (str, os.PathLike)) else list(journals)
    runs = [JournalSummary(path) for path in paths]
    medias = [read_media(summary) for summary in runs]
    samples = [samples_of(summary) for summary in runs] if system else None
    parts = [
        describe(summary, media, rows, samples[index] if samples else None)
        for index, (summary, media) in enumerate(zip(runs, medias))
    ]
    text = ("\n\n" + "=" * 80 + "\n\n").join(parts)
    if plot:
        text += "\n\n" + _plot(runs, medias, Path(plot), text, samples)
    return text


def _numeric(summary: JournalSummary) -> dict[str, list[tuple[int, float]]]:
    series = {
        key: [(s, v) for s, v in points if isinstance(v, (int, float)) and not isinstance(v, bool) and s is not None]
        for key, points in summary.metrics.items()
        if not is_system(key)
    }
    return {key: points for key, points in series.items() if points}


def _plot(
    runs: list[JournalSummary],
    medias: list[RunMedia],
    path: Path,
    text: str,
    samples: list[RunSamples] | None = None,
) -> str:
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
    sampled = sorted({key for run in samples or [] for key in run.series})
    thumbnails = [
        (f"{summary.header.get('run_id')}\n{key}" if len(runs) > 1 else key, step, file)
        for summary, media in zip(runs, medias)
        for key, step, file in _last_per_key(media.images)
        if file.suffix.lower() == ".png" and file.is_file()
    ][:MAX_THUMBNAILS]
    if not keys and not thumbnails and not sampled:
        raise PlotSkipped(f"no plot written to {path}: the run has no numeric metrics and no images", text)
    panels = keys[:MAX_PANELS]
    system_panels = sampled[:MAX_SYSTEM_PANELS]
    columns = 2 if len(panels) + len(system_panels) > 1 else 1
    metric_rows = math.ceil(len(panels) / columns)
    system_rows = math.ceil(len(system_panels) / columns)
    heading = 1 if system_panels else 0  # a thin row that says the panels below are on another axis
    thumb_columns = 4
    thumb_rows = math.ceil(len(thumbnails) / thumb_columns)
    ratios = [2.6] * metric_rows + [0.35] * heading + [2.6] * system_rows + [2.4] * thumb_rows
    figure = plt.figure(figsize=(11, sum(ratios)))
    grid = figure.add_gridspec(len(ratios), columns * thumb_columns, height_ratios=ratios)
    span = thumb_columns
    for index, key in enumerate(panels):
        axis = figure.add_subplot(grid[index // columns, (index % columns) * span : (index % columns + 1) * span])
        for summary, points in zip(runs, series):
            if key in points:
                axis.plot([s for s, _ in points[key]], [v for _, v in points[key]], label=_label(summary))
        axis.set_title(key, fontsize=9)
        axis.set_xlabel("step", fontsize=7)
        axis.grid(alpha=0.3)
        if len(runs) > 1 and index == 0:
            axis.legend(fontsize=7)
    if system_panels and samples is not None:
        axes = {run.axis() for run in samples if run.count}
        x_label = axes.pop() if len(axes) == 1 else "sample"
        title = figure.add_subplot(grid[metric_rows, :])
        title.axis("off")
        title.text(0, 0.5, f"system samples (against {x_label}, not steps)", fontsize=10, weight="bold", va="center")
        for index, key in enumerate(system_panels):
            row, column = metric_rows + heading + index // columns, (index % columns) * span
            axis = figure.add_subplot(grid[row, column : column + span])
            for summary, run in zip(runs, samples):
                drawn = run.points(key) if x_label != "sample" else [
                    (float(i), v) for i, _, v in run.series.get(key, [])
                ]  # fmt: skip
                if drawn:
                    axis.plot([x for x, _ in drawn], [v for _, v in drawn], marker="." if len(drawn) < 30 else None,
                              label=_label(summary))  # fmt: skip
            axis.set_title(key, fontsize=9)
            axis.set_xlabel(x_label, fontsize=7)
            axis.set_facecolor("#f6f6f6")
            axis.grid(alpha=0.3)
            if len(runs) > 1 and index == 0:
                axis.legend(fontsize=7)
    cell = columns  # grid columns per thumbnail: four thumbnails a row
    first_thumb_row = metric_rows + heading + system_rows
    for index, (label, step, file) in enumerate(thumbnails):
        row, column = first_thumb_row + index // thumb_columns, (index % thumb_columns) * cell
        axis = figure.add_subplot(grid[row, column : column + cell])
        axis.imshow(matplotlib.image.imread(file))
        axis.set_title(f"{label} @ step {step}", fontsize=7)
        axis.axis("off")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    omitted = len(keys) - len(panels)
    left_out = len(sampled) - len(system_panels)
    notes = [f"{omitted} more metrics not plotted"] if omitted else []
    notes += [f"{left_out} more system samples not plotted"] if left_out else []
    return f"plot written to {path}" + (f" ({'; '.join(notes)})" if notes else "")


def _last_per_key(images: list[tuple[str, Any, Path]]) -> list[tuple[str, Any, Path]]:
    """The last image logged under each key (the first of its list), in the order keys first appeared."""
    last: dict[str, tuple[str, Any, Path]] = {}
    for key, step, file in images:
        if key not in last or last[key][1] != step:
            last[key] = (key, step, file)
    return list(last.values())
