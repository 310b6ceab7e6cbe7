"""``tracking compare``: several runs side by side: each chosen series' last, min and max (and best, where
the name says which way is better), and the config keys that differ. As a text table, as JSON (for
scripts and agents) or as one self-contained HTML page (curves overlaid as inline SVG, the config diff;
nothing fetched from the network).

"Best" is said only where a series' name tells which way is better (:func:`goal_of`): the minimum for a
loss, an error, a perplexity, a time, ...; the maximum for an accuracy, an F1, a reward, a score, ...
Any other series (a learning rate, a gradient norm) gets its last, min and max and no best; the JSON's
``goal`` is ``"min"``, ``"max"`` or ``null``.

Only what the users logged is compared unless ``system=True``: then the runs' system samples follow in
a section of their own, on their own axis (seconds since each run started), without a best
(:mod:`tracking_core.cli.samples`).
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from ..cli.samples import RunSamples
from .export import RunRows, flatten
from .resolve import resolve_run

__all__ = ["Comparison", "RunSeries", "compare_runs", "goal_of"]

#: The words (whole, or a whole part of a key) that name a measure for which lower is better.
_LOWER_IS_BETTER = re.compile(
    r"loss(es)?|errors?|err|perplexity|ppl|wer|cer|ter|mse|mae|rmse|mape|nll|time|runtime|latency|duration"
    r"|cost|regret|fid|bpc|bpd"
)
#: ... and those for which higher is better (``acc1``, ``top5``, ``rougeLsum``, ``mAP50`` included).
_HIGHER_IS_BETTER = re.compile(
    r"acc(uracy)?\d*|top\d+|f\d|f1score|fscore|precision|prec|recall|auc|auroc|auprc|bleu|sacrebleu|rouge\w*"
    r"|map\d*|iou|miou|dice|reward|rewards|return|returns|score|r2|psnr|ssim|meteor|chrf"
)
#: A word after the measure that makes the series something else: ``loss_scale``, ``reward_std``.
_NOT_THE_MEASURE = frozenset(
    {"scale", "scaler", "weight", "weights", "coef", "coeff", "std", "var", "variance", "count", "threshold"}
)
_PART = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def _words(key: str) -> Iterator[str]:
    """The words of ``key``, lowercased: its parts between any ``/``, ``_``, ``.``, ``-``, ... and, for a
    part that is not itself a known word, its camelCase pieces (``valLoss``: ``val``, ``loss``)."""
    for part in _PART.findall(key):
        word = part.lower()
        if _LOWER_IS_BETTER.fullmatch(word) or _HIGHER_IS_BETTER.fullmatch(word) or word in _NOT_THE_MEASURE:
            yield word
        else:
            yield from (piece.lower() for piece in _CAMEL.findall(part))


def goal_of(key: str) -> str | None:
    """``"min"`` when the name says lower values of ``key`` are better, ``"max"`` when it says higher ones
    are, ``None`` when it says neither (``lr``, ``grad_norm``, ``lossless_ratio``).

    Whole words only, the last one that names a measure deciding (``acc/val_loss`` is a loss); a word
    after it such as ``scale`` or ``std`` makes the series something else (``loss_scale``).
    """
    for word in reversed(list(_words(key))):
        if word in _NOT_THE_MEASURE:
            return None
        if _LOWER_IS_BETTER.fullmatch(word):
            return "min"
        if _HIGHER_IS_BETTER.fullmatch(word):
            return "max"
    return None


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
    samples: RunSamples = field(default_factory=RunSamples)  # the system samples, on their own axis

    def stats(self, key: str) -> dict[str, Any] | None:
        """Points, last, min and max of ``key``; ``best`` and ``best_step`` only when its ``goal`` is known."""
        points = self.series.get(key)
        if not points:
            return None
        finite = [(step, value) for step, value in points if math.isfinite(value)]
        goal = goal_of(key)
        stats: dict[str, Any] = {"points": len(points), "last": points[-1][1], "last_step": points[-1][0]}
        stats.update(best=None, best_step=None, min=None, max=None)
        if finite:
            low = min(finite, key=lambda point: point[1])
            high = max(finite, key=lambda point: point[1])
            stats.update(min=low[1], max=high[1])
            if goal is not None:
                best = low if goal == "min" else high
                stats.update(best=best[1], best_step=best[0])
        return {**stats, "goal": goal}


def _load(name: str, logging_dir: str | os.PathLike[str]) -> RunSeries:
    journal = resolve_run(name, logging_dir)
    rows = RunRows(journal)
    label = f"{rows.context.get('project')}/{rows.context.get('run_id')}"
    run = RunSeries(label, journal, rows.context, rows.config, samples=rows.samples())
    for step, _moment, key, value in rows.points():
        if _number(value) and step is not None:
            run.series.setdefault(key, []).append((int(step), float(value)))
    for points in run.series.values():
        points.sort(key=lambda point: point[0])
    return run


@dataclass
class Comparison:
    """The runs and the keys chosen; ``system_keys`` is ``None`` unless the system samples were asked for."""

    runs: list[RunSeries]
    keys: list[str]
    system_keys: list[str] | None = None

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
        document = {
            "runs": [
                {"label": run.label, "journal": str(run.journal), **run.context, "system_samples": run.samples.count}
                for run in self.runs
            ],
            "series": {key: {run.label: run.stats(key) for run in self.runs} for key in self.keys},
            "config_diff": {
                key: dict(zip((run.label for run in self.runs), values)) for key, values in self.config_diff().items()
            },
        }
        if self.system_keys is not None:
            document["system"] = {
                key: {run.label: run.samples.stats(key) for run in self.runs} for key in self.system_keys
            }
        return document

    def _samples_note(self) -> str:
        """What was left out, when the runs have samples and they were not asked for (``""`` otherwise)."""
        counts = [run.samples.count for run in self.runs]
        if self.system_keys is not None or not any(counts):
            return ""
        each = str(counts[0]) if len(set(counts)) == 1 else ", ".join(map(str, counts))
        return f"system samples not shown ({each} per run): tracking compare --system adds them, on their own time axis"

    def text(self) -> str:
        from ..cli.tabular import format_table

        rows: list[tuple[str, ...]] = [("key", "run", "points", "last", "best", "best step", "min", "max")]
        for key in self.keys:
            for run in self.runs:
                stats = run.stats(key)
                if stats is None:
                    rows.append((key, run.label, "0", "-", "-", "-", "-", "-"))
                    continue
                best = f"{_fmt(stats['best'])} ({stats['goal']})" if stats["goal"] else "-"
                rows.append(
                    (key, run.label, str(stats["points"]), _fmt(stats["last"]), best,
                     _fmt(stats["best_step"]), _fmt(stats["min"]), _fmt(stats["max"]))
                )  # fmt: skip
        parts = [format_table(rows) if self.keys else "no numeric series in common to compare"]
        if self.system_keys:
            table: list[tuple[str, ...]] = [("system sample", "run", "samples", "last", "min", "mean", "max")]
            for key in self.system_keys:
                for run in self.runs:
                    sampled = run.samples.stats(key)
                    table.append(
                        (key, run.label, "0", "-", "-", "-", "-") if sampled is None
                        else (key, run.label, str(sampled["samples"]), _fmt(sampled["last"]), _fmt(sampled["min"]),
                              _fmt(sampled["mean"]), _fmt(sampled["max"]))
                    )  # fmt: skip
            parts += ["", format_table(table)]
        elif self.system_keys is not None:
            parts += ["", "system samples: none in these runs"]
        note = self._samples_note()
        if note:
            parts += ["", note]
        diff = self.config_diff()
        if diff:
            config = [("config", *(run.label for run in self.runs))]
            config += [(key, *_config_cells(values)) for key, values in diff.items()]
            parts += ["", format_table(config)]
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
            goal = goal_of(key)
            cells = []
            for run in self.runs:
                stats = run.stats(key)
                if stats is None:
                    cells.append("<td>-</td>")
                    continue
                best = f"<br>best {_fmt(stats['best'])} @ {_fmt(stats['best_step'])}" if goal else ""
                cells.append(
                    f"<td>last {_fmt(stats['last'])}{best}<br>min {_fmt(stats['min'])}<br>max {_fmt(stats['max'])}</td>"
                )
            said = f" <small>({goal} is best)</small>" if goal else ""
            summary.append(f"<tr><th>{escape(key)}{said}</th>{''.join(cells)}</tr>")
        series = (
            f"<table><tr><th>key</th>{head}</tr>{''.join(summary)}</table>" if self.keys
            else "<p>No numeric series to compare.</p>"
        )  # fmt: skip
        note = self._samples_note()
        if note:
            series += f'<p class="note">{escape(note)}.</p>'
        diff_rows = [
            f"<tr><th>{escape(key)}</th>{''.join(f'<td>{escape(cell)}</td>' for cell in _config_cells(values))}</tr>"
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
            f'<section id="series"><h2>Series</h2>{series}<div class="charts">{"".join(charts)}</div></section>'
            f"{self._system_html(head)}"
            f"<h2>Config differences</h2>{diff}</body></html>\n"
        )

    def _system_html(self, head: str) -> str:
        """The samples' own section: a table without a best and charts against each run's elapsed time."""
        if self.system_keys is None:
            return ""
        if not self.system_keys:
            return '<section id="system"><h2>System samples</h2><p>None in these runs.</p></section>'
        from .charts import line_chart

        rows = []
        for key in self.system_keys:
            cells = []
            for run in self.runs:
                sampled = run.samples.stats(key)
                cells.append(
                    "<td>-</td>" if sampled is None
                    else f"<td>last {_fmt(sampled['last'])}<br>min {_fmt(sampled['min'])}<br>"
                    f"mean {_fmt(sampled['mean'])}<br>max {_fmt(sampled['max'])}<br>{sampled['samples']} samples</td>"
                )  # fmt: skip
            rows.append(f"<tr><th>{escape(key)}</th>{''.join(cells)}</tr>")
        axes = {run.samples.axis() for run in self.runs if run.samples.count}
        axis = axes.pop() if len(axes) == 1 else "sample"
        charts = []
        for key in self.system_keys:
            lines = [
                (run.label, run.samples.points(key) if axis != "sample" else _indexed(run.samples, key))
                for run in self.runs
            ]
            charts.append(line_chart(key, lines, x_label=axis))
        return (
            '<section id="system"><h2>System samples</h2>'
            f'<p class="note">Read by the sampler on its own clock, not at the training\'s steps: drawn against '
            f"{escape(axis)}, with no best.</p>"
            f"<table><tr><th>sample</th>{head}</tr>{''.join(rows)}</table>"
            f'<div class="charts">{"".join(charts)}</div></section>'
        )


def _indexed(samples: RunSamples, key: str) -> list[tuple[float, float]]:
    return [(float(index), value) for index, _, value in samples.series.get(key, [])]


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


def _config_cells(values: list[Any]) -> list[str]:
    """A config row's values as printed: floats in full (shortest round-trip, so 0.1 and 0.10000001 read
    apart), and long texts shortened only while the shortened texts still tell the values apart."""

    def shown(value: Any, whole: bool) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return repr(value)
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return text if whole or len(text) <= 40 else text[:37] + "..."

    cells = [shown(value, False) for value in values]
    if len(set(cells)) < len({json.dumps(value, default=str) for value in values}):
        cells = [shown(value, True) for value in values]
    return cells


def compare_runs(
    names: list[str],
    keys: list[str] | None = None,
    logging_dir: str | os.PathLike[str] = "runs",
    *,
    system: bool = False,
) -> Comparison:
    """Load the runs ``names`` designates and pick the series to compare.

    ``keys`` are names or shell patterns (``val/*``); by default every numeric series any run logged.
    ``system`` adds the runs' system samples (``keys`` picks among them too).
    """
    runs = [_load(name, logging_dir) for name in names]
    available = sorted({key for run in runs for key in run.series})
    sampled = sorted({key for run in runs for key in run.samples.series}) if system else []
    if keys:
        chosen = [key for key in available if any(fnmatch.fnmatchcase(key, pattern) for pattern in keys)]
        sampled = [key for key in sampled if any(fnmatch.fnmatchcase(key, pattern) for pattern in keys)]
        if not chosen and not sampled:
            hint = "" if system else "; system samples are compared with --system"
            raise ValueError(
                f"--keys {' '.join(keys)} matches no numeric series (there are: {', '.join(available[:20])}){hint}"
            )
    else:
        chosen = available
    labels = [run.label for run in runs]
    for index, run in enumerate(runs):  # the same run named twice, or two runs with one id: tell them apart
        if labels.count(run.label) > 1:
            run.label = f"{run.label} #{index + 1}"
    return Comparison(runs, chosen, sampled if system else None)
