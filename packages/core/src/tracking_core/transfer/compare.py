"""``tracking compare``: several runs side by side: each chosen series' last, best and min, and the config
keys that differ. As a text table, as JSON (for scripts and agents) or as one self-contained HTML page
(curves overlaid as inline SVG, the config diff; nothing fetched from the network).

"Best" is the minimum for a series whose name says it is a loss or an error (``loss``, ``error``,
``err``, ``mse``, ``mae``, ``rmse``, ``perplexity``, ``wer``, ``cer``), the maximum otherwise; the JSON
says which (``goal``).
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import math
import os
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from .export import RunRows, flatten
from .resolve import resolve_run

__all__ = ["Comparison", "RunSeries", "compare_runs", "goal_of"]

_LOWER_IS_BETTER = re.compile(r"(loss|error|err|mse|mae|rmse|perplexity|ppl|wer|cer)(\b|_|$)", re.IGNORECASE)


def goal_of(key: str) -> str:
    """``"min"`` when a lower value of ``key`` is better, else ``"max"``."""
    return "min" if _LOWER_IS_BETTER.search(key) else "max"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class RunSeries:
    """One run's label, config and numeric series."""

    label: str
    journal: Path
    context: dict[str, Any]
    config: dict[str, Any]
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)

    def stats(self, key: str) -> dict[str, Any] | None:
        points = self.series.get(key)
        if not points:
            return None
        finite = [(step, value) for step, value in points if math.isfinite(value)]
        goal = goal_of(key)
        stats: dict[str, Any] = {"points": len(points), "last": points[-1][1], "last_step": points[-1][0]}
        if finite:
            low = min(finite, key=lambda point: point[1])
            high = max(finite, key=lambda point: point[1])
            best = low if goal == "min" else high
            stats.update(best=best[1], best_step=best[0], min=low[1], max=high[1])
        else:
            stats.update(best=None, best_step=None, min=None, max=None)
        return {**stats, "goal": goal}


def _load(name: str, logging_dir: str | os.PathLike[str]) -> RunSeries:
    journal = resolve_run(name, logging_dir)
    rows = RunRows(journal)
    label = f"{rows.context.get('project')}/{rows.context.get('run_id')}"
    run = RunSeries(label, journal, rows.context, rows.config)
    for step, _moment, key, value in rows.points():
        if _number(value) and step is not None:
            run.series.setdefault(key, []).append((int(step), float(value)))
    for points in run.series.values():
        points.sort(key=lambda point: point[0])
    return run


@dataclass
class Comparison:
    runs: list[RunSeries]
    keys: list[str]

    def config_diff(self) -> dict[str, list[Any]]:
        """Each flattened config key whose value is not the same in every run: its value per run."""
        flat = [flatten(run.config) for run in self.runs]
        missing = object()
        diff: dict[str, list[Any]] = {}
        for key in sorted(set().union(*flat)):
            values = [config.get(key, missing) for config in flat]
            if any(json.dumps(v, default=str) != json.dumps(values[0], default=str) for v in values[1:]):
                diff[key] = [None if value is missing else value for value in values]
        return diff

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": [{"label": run.label, "journal": str(run.journal), **run.context} for run in self.runs],
            "series": {key: {run.label: run.stats(key) for run in self.runs} for key in self.keys},
            "config_diff": {
                key: dict(zip((run.label for run in self.runs), values)) for key, values in self.config_diff().items()
            },
        }

    def text(self) -> str:
        from ..cli.tabular import format_table

        rows: list[tuple[str, ...]] = [("key", "run", "points", "last", "best", "best step", "min", "max")]
        for key in self.keys:
            for run in self.runs:
                stats = run.stats(key)
                if stats is None:
                    rows.append((key, run.label, "0", "-", "-", "-", "-", "-"))
                    continue
                rows.append(
                    (key, run.label, str(stats["points"]), _fmt(stats["last"]), f"{_fmt(stats['best'])} ({stats['goal']})",
                     _fmt(stats["best_step"]), _fmt(stats["min"]), _fmt(stats["max"]))
                )  # fmt: skip
        parts = [format_table(rows) if self.keys else "no numeric series in common to compare"]
        diff = self.config_diff()
        if diff:
            table = [("config", *(run.label for run in self.runs))]
            table += [(key, *(_fmt(value) for value in values)) for key, values in diff.items()]
            parts += ["", format_table(table)]
        else:
            parts += ["", "config: the same in every run"]
        return "\n".join(parts)

    def html(self) -> str:
        from .charts import PALETTE, line_chart

        labels = [run.label for run in self.runs]
        charts = [line_chart(key, [(run.label, run.series.get(key, [])) for run in self.runs]) for key in self.keys]
        head = "".join(
            f'<th><span class="swatch" style="background:{PALETTE[i % len(PALETTE)]}"></span>{escape(label)}</th>'
            for i, label in enumerate(labels)
        )
        summary = []
        for key in self.keys:
            cells = []
            for run in self.runs:
                stats = run.stats(key)
                cells.append(
                    "<td>-</td>" if stats is None
                    else f"<td>last {_fmt(stats['last'])}<br>best {_fmt(stats['best'])} @ {_fmt(stats['best_step'])}"
                    f"<br>min {_fmt(stats['min'])}</td>"
                )  # fmt: skip
            summary.append(f"<tr><th>{escape(key)} <small>({goal_of(key)} is best)</small></th>{''.join(cells)}</tr>")
        diff_rows = [
            f"<tr><th>{escape(key)}</th>{''.join(f'<td>{escape(_fmt(value))}</td>' for value in values)}</tr>"
            for key, values in self.config_diff().items()
        ]
        diff = (
            f"<table><tr><th>config</th>{head}</tr>{''.join(diff_rows)}</table>"
            if diff_rows
            else "<p>The config is the same in every run.</p>"
        )
        made = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>compare: {escape(', '.join(labels))}</title><style>{_STYLE}</style></head><body>"
            f'<h1>{len(labels)} runs compared</h1><p class="note">made by tracking compare, {made}</p>'
            f"<h2>Series</h2><table><tr><th>key</th>{head}</tr>{''.join(summary)}</table>"
            f'<div class="charts">{"".join(charts)}</div>'
            f"<h2>Config differences</h2>{diff}</body></html>\n"
        )


_STYLE = (
    "body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0 16px}"
    "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top;font-size:13px}"
    "th{background:#f4f4f4}.charts{display:flex;flex-wrap:wrap;gap:12px}.note{color:#666;font-size:12px}"
    ".swatch{display:inline-block;width:10px;height:10px;margin-right:6px}"
)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def compare_runs(
    names: list[str], keys: list[str] | None = None, logging_dir: str | os.PathLike[str] = "runs"
) -> Comparison:
    """Load the runs ``names`` designates and pick the series to compare.

    ``keys`` are names or shell patterns (``val/*``); by default every numeric series any run has.
    """
    runs = [_load(name, logging_dir) for name in names]
    seen = [key for run in runs for key in run.series]
    available = sorted(set(seen))
    if keys:
        chosen = [key for key in available if any(fnmatch.fnmatchcase(key, pattern) for pattern in keys)]
        if not chosen:
            raise ValueError(
                f"--keys {' '.join(keys)} matches no numeric series (there are: {', '.join(available[:20])})"
            )
    else:
        chosen = available
    labels = [run.label for run in runs]
    for index, run in enumerate(runs):  # the same run named twice, or two runs with one id: tell them apart
        if labels.count(run.label) > 1:
            run.label = f"{run.label} #{index + 1}"
    return Comparison(runs, chosen)
