"""Line charts as inline SVG: no script, no font file, no network (``compare --html``, the docs' figures)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["PALETTE", "bar_chart", "line_chart"]

#: Distinguishable on white and for the common colour-vision deficiencies (Okabe-Ito, reordered).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MAX_POINTS = 1500  # per line: more adds bytes, not detail, at this width


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _label(value: float) -> str:
    return f"{value:.4g}"


def _thin(points: Sequence[tuple[float, float]]) -> Sequence[tuple[float, float]]:
    """Every n-th point (the last always kept) when a line has more than the chart can show."""
    if len(points) <= MAX_POINTS:
        return points
    stride = math.ceil(len(points) / MAX_POINTS)
    kept = list(points[::stride])
    if kept[-1] != points[-1]:
        kept.append(points[-1])
    return kept


def line_chart(
    title: str,
    lines: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    width: int = 560,
    height: int = 300,
    x_label: str = "step",
) -> str:
    """One ``<svg>`` with a line per ``(label, [(x, y), ...])``, axes with ticks and a legend."""
    left, right, top, bottom = 64, 16, 28, 58
    # legend entries per row: up to three, fewer when the labels are too long to sit side by side
    longest = max((len(label) for label, _ in lines), default=0)
    per_row = max(1, min(3, (width - left - right) // (28 + math.ceil(longest * 6.5))))
    height += max(0, math.ceil(len(lines) / per_row) - 1) * 14  # legend rows past the first
    bottom += max(0, math.ceil(len(lines) / per_row) - 1) * 14
    plot_w, plot_h = width - left - right, height - top - bottom
    finite = [(x, y) for _, pts in lines for x, y in pts if math.isfinite(x) and math.isfinite(y)]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{left}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#999"/>',
    ]
    if not finite:
        parts.append(f'<text x="{left + 8}" y="{top + 20}">no finite values</text></svg>')
        return "".join(parts)
    x_low, x_high = min(x for x, _ in finite), max(x for x, _ in finite)
    y_low, y_high = min(y for _, y in finite), max(y for _, y in finite)
    if x_high == x_low:
        x_low, x_high = x_low - 1, x_high + 1
    if y_high == y_low:
        pad = abs(y_low) * 0.05 or 1.0
        y_low, y_high = y_low - pad, y_high + pad

    def sx(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * plot_w

    def sy(y: float) -> float:
        return top + plot_h - (y - y_low) / (y_high - y_low) * plot_h

    for tick in _ticks(x_low, x_high):
        x = sx(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="#eee"/>')
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 14}" text-anchor="middle">{_label(tick)}</text>')
    for tick in _ticks(y_low, y_high):
        y = sy(tick)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(tick)}</text>')
    parts.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{top + plot_h + 28}" text-anchor="middle" fill="#555">'
        f"{escape(x_label)}</text>"
    )
    for index, (label, points) in enumerate(lines):
        color = PALETTE[index % len(PALETTE)]
        shown = [(x, y) for x, y in _thin(points) if math.isfinite(x) and math.isfinite(y)]
        if len(shown) == 1:
            x, y = shown[0]
            parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"/>')
        elif shown:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in shown)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{path}"/>')
        lx = left + (index % per_row) * (plot_w // per_row)
        ly = top + plot_h + 44 + (index // per_row) * 14
        parts.append(f'<rect x="{lx}" y="{ly - 8}" width="12" height="3" fill="{color}"/>')
        parts.append(f'<text x="{lx + 16}" y="{ly - 4}">{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _log_ticks(low: float, high: float) -> list[float]:
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    return [10.0**power for power in range(first, last + 1)]


def _amount(value: float) -> str:
    """A bar's figure: ``222,160`` rather than ``2.222e+05``."""
    return f"{value:,.0f}" if abs(value) >= 10_000 else _label(value)


def bar_chart(
    title: str,
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    width: int = 720,
    value_label: str = "",
    log: bool = False,
    stacked: bool = False,
    reference: float | None = None,
) -> str:
    """One ``<svg>`` of horizontal bars: a row per category, a bar per ``(label, values)`` series.

    ``stacked`` puts a row's series end to end (parts of one total); ``log`` spaces the value axis by
    powers of ten, for figures that span several (a missing or non-positive value draws no bar there);
    ``reference`` draws a dashed line at that value (e.g. 1.0 for a ratio).
    """
    label_chars = max((len(category) for category in categories), default=0)
    left, right, top = min(16 + 6 * label_chars, width // 2), 56, 28
    per_row = 14 if stacked else 10 * max(1, len(series)) + 2
    row_h = per_row + 8
    legend_rows = math.ceil(len(series) / 3)
    plot_h = row_h * max(1, len(categories))
    height = top + plot_h + 34 + 14 * legend_rows
    plot_w = width - left - right
    values = [value for _, row in series for value in row if value is not None and math.isfinite(value)]
    if stacked:
        values = [sum(row[index] or 0.0 for _, row in series if index < len(row)) for index in range(len(categories))]
    if reference is not None:
        values.append(reference)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="8" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#999"/>',
    ]
    positive = [value for value in values if value > 0]
    if not positive:
        parts.append(f'<text x="{left + 8}" y="{top + 20}">no values</text></svg>')
        return "".join(parts)
    if log:
        low, high = 10.0 ** math.floor(math.log10(min(positive))), 10.0 ** math.ceil(math.log10(max(positive)))
        if high <= low:
            high = low * 10

        def sx(value: float) -> float:
            return left + (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low)) * plot_w

        ticks = _log_ticks(low, high)
    else:
        low, high = 0.0, max(positive) * 1.05

        def sx(value: float) -> float:
            return left + (value - low) / (high - low) * plot_w

        ticks = _ticks(low, high)
    for tick in ticks:
        x = sx(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="#eee"/>')
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 14}" text-anchor="middle">{_amount(tick)}</text>')
    parts.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{top + plot_h + 28}" text-anchor="middle" fill="#555">'
        f"{escape(value_label)}</text>"
    )
    for row_index, category in enumerate(categories):
        row_top = top + row_index * row_h + 4
        parts.append(
            f'<text x="{left - 6}" y="{row_top + per_row / 2 + 4:.1f}" text-anchor="end">{escape(category)}</text>'
        )
        start = low if log else 0.0
        for index, (label, row) in enumerate(series):
            value = row[row_index] if row_index < len(row) else None
            if value is None or not math.isfinite(value) or (log and value <= 0):
                continue
            color = PALETTE[index % len(PALETTE)]
            if stacked:
                x0, x1, y, h = sx(start), sx(start + value), row_top, per_row
                start += value
            else:
                x0, x1, y, h = sx(low if log else 0.0), sx(value), row_top + index * 10, 9
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0.5):.1f}" height="{h}" fill="{color}">'
                f"<title>{escape(category)}, {escape(label)}: {_amount(value)}</title></rect>"
            )
            if not stacked:
                parts.append(f'<text x="{x1 + 3:.1f}" y="{y + 8}" font-size="9">{_amount(value)}</text>')
    if reference is not None and (not log or reference > 0):
        x = sx(reference)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="#333" stroke-dasharray="4 3"/>'
        )
    for index, (label, _) in enumerate(series):
        lx = left + (index % 3) * (plot_w // 3)
        ly = top + plot_h + 44 + (index // 3) * 14
        parts.append(f'<rect x="{lx}" y="{ly - 8}" width="12" height="8" fill="{PALETTE[index % len(PALETTE)]}"/>')
        parts.append(f'<text x="{lx + 16}" y="{ly}">{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)
