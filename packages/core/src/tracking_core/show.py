"""``tracking show``: what a journal holds, as a table (and a plot when matplotlib is installed)."""

from __future__ import annotations

import math
import os
from pathlib import Path

from .journal import JournalSummary


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    text = str(value)
    return text if len(text) <= 24 else text[:21] + "..."


def show(journal: str | os.PathLike, plot: str | os.PathLike | None = None) -> str:
    summary = JournalSummary(journal)
    header = summary.header
    lines = [
        f"journal  {summary.path}",
        f"project  {header.get('project')}   run {header.get('run_id')}   source {header.get('source')}   "
        f"format v{header.get('version')}   {'finished' if summary.finished else 'not finished (killed or still running)'}",
        "records  " + ", ".join(f"{kind} {count}" for kind, count in sorted(summary.counts.items())),
    ]
    if summary.config:
        lines.append(f"config   {len(summary.config)} top-level keys: {', '.join(sorted(summary.config)[:8])}")
    rows = [("key", "points", "steps", "last", "min", "max")]
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
    if len(rows) > 1:
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        table = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
        table.insert(1, "  ".join("-" * width for width in widths))
        lines += ["", *table]
    if plot:
        lines.append("")
        lines.append(_plot(summary, Path(plot)))
    return "\n".join(lines)


def _plot(summary: JournalSummary, path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed (pip install matplotlib)"
    numeric = {
        key: [(s, v) for s, v in points if isinstance(v, (int, float)) and s is not None]
        for key, points in summary.metrics.items()
    }
    numeric = {key: points for key, points in numeric.items() if points}
    if not numeric:
        return "plot skipped: no numeric metrics"
    figure, axes = plt.subplots(len(numeric), 1, figsize=(7, 2.2 * len(numeric)), squeeze=False)
    for axis, (key, points) in zip(axes[:, 0], sorted(numeric.items())):
        axis.plot([s for s, _ in points], [v for _, v in points])
        axis.set_title(key, fontsize=9)
        axis.grid(alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return f"plot written to {path}"
