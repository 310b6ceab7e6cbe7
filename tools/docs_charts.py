"""Draw the benchmarks' and guarantees' figures as SVG charts for the docs, from the tables they print.

docs/benchmarks.md holds each benchmark's output as printed (``python tools/bench.py --loop``, ``python
tools/bench.py``, ``python tools/bench.py --throughput``), docs/guarantees.md the reliability table the
test session prints, docs/moving-runs.md the import benchmark's (``python tools/bench.py --import``).
This script reads those tables and draws them with the charts of ``tracking compare --html``
(``tracking_core.transfer.charts``) into ``docs/figures/*.svg``, which those pages embed. Paste a new
benchmark output into its page, then run it again:

    python tools/docs_charts.py            # rewrite docs/figures/*.svg
    python tools/docs_charts.py --check    # exit 1 if a committed figure differs from its table
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packages/core/src"))

from tracking_core.transfer.charts import bar_chart  # noqa: E402

FIGURES = ROOT / "docs/figures"
Row = dict[str, str]


def section(text: str, name: str) -> str:
    """A page's text between ``--8<-- [start:name]`` and ``[end:name]``."""
    match = re.search(rf"\[start:{name}\][^\n]*\n(.*?)\n[^\n]*\[end:{name}\]", text, re.S)
    if not match:
        raise SystemExit(f"docs_charts: no section {name!r} in the page")
    return match.group(1)


def printed_table(text: str, heading: str) -> list[Row]:
    """The first fenced block after ``heading``, read as the benchmark printed it: a header line, then a
    line of dashes whose runs give the columns' widths, then the rows."""
    start = text.index(heading)
    block = text[text.index("```\n", start) + 4 :]
    lines = block[: block.index("```")].splitlines()
    header, rule, rows = lines[0], lines[1], lines[2:]
    spans = [match.span() for match in re.finditer(r"-+", rule)]
    spans[-1] = (spans[-1][0], max(len(line) for line in lines))

    def cells(line: str) -> list[str]:
        return [line[a:b].strip() for a, b in spans]

    names = cells(header)
    return [dict(zip(names, cells(line))) for line in rows if line.strip() and not line.startswith(" ")]


def markdown_table(text: str) -> list[Row]:
    lines = [line for line in text.splitlines() if line.startswith("|")]
    names = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [dict(zip(names, (cell.strip() for cell in line.strip("|").split("|")))) for line in lines[2:]]


def number(cell: str) -> float | None:
    """The first number in a cell (``1,106.7``, ``1.088x``, ``620`` of a range), None if it has none."""
    match = re.search(r"\d[\d,]*(?:\.\d+)?", cell)
    return float(match.group().replace(",", "")) if match else None


def median_of(cell: str) -> float | None:
    """The middle of ``min / med / max``."""
    parts = cell.split("/")
    return number(parts[1]) if len(parts) == 3 else number(cell)


def by_backend(
    rows: list[Row], key: str, series: Sequence[tuple[str, str]], column: str, read: Callable[[str], float | None]
) -> tuple[list[str], list[tuple[str, list[float | None]]]]:
    """Categories (the ``key`` column, in order of appearance) and one series per ``(label, value of
    the 'path'/'case' column that selects it)``."""
    selected = [row for row in rows if any(row[s.split("=", 1)[0]] == s.split("=", 1)[1] for _, s in series)]
    categories: list[str] = []
    for row in selected:
        if row[key] not in categories:
            categories.append(row[key])
    out: list[tuple[str, list[float | None]]] = []
    for label, selector in series:
        field, wanted = selector.split("=", 1)
        values = {row[key]: read(row[column]) for row in rows if row[field] == wanted}
        out.append((label, [values.get(category) for category in categories]))
    return categories, out


def loop_charts(performance: str) -> dict[str, str]:
    rows = printed_table(performance, "## The training loop")
    series = [
        ("tracking, threads", "path=tracking (threads)"),
        ("tracking, delivery process", "path=tracking (process)"),
        ("accelerate.tracking", "path=accelerate"),
    ]
    cats, ratio = by_backend(rows, "backends", series, "loop vs none (min/med/max)", median_of)
    _, finish = by_backend(rows, "backends", series, "create->finish s", median_of)
    return {
        "bench-loop.svg": bar_chart(
            "Training loop time with tracking / without (median of rounds; 1.0 = free)",
            cats,
            ratio,
            value_label="loop time vs no tracking (x, log scale)",
            log=True,
            reference=1.0,
        ),
        "bench-finish.svg": bar_chart(
            "From creating the run until finish() returned (s, median; includes the ~2 s loop)",
            cats,
            finish,
            value_label="seconds (log scale)",
            log=True,
        ),
    }


def caller_charts(performance: str) -> dict[str, str]:
    rows = [row for row in printed_table(performance, "## What one `log()` costs") if row["case"] != "floor"]
    series = [
        ("SDK direct", "path=SDK direct"),
        ("accelerate.tracking", "path=reference (accelerate)"),
        ("dispatcher, threads", "path=dispatcher async"),
        ("dispatcher, delivery process", "path=dispatcher process"),
    ]
    cats, p50 = by_backend(rows, "case", series, "p50 µs", number)
    _, total = by_backend(rows, "case", series, "total s", number)
    return {
        "bench-log-p50.svg": bar_chart(
            "What one log() of 8 scalars costs the caller (p50)",
            cats,
            p50,
            value_label="µs per call (log scale)",
            log=True,
        ),
        "bench-total.svg": bar_chart(
            "2,000 log() calls: from creating the run until finish() returned",
            cats,
            total,
            value_label="seconds (log scale)",
            log=True,
        ),
    }


def throughput_chart(performance: str) -> dict[str, str]:
    rows = printed_table(performance, "## Sustained throughput")
    cats = [row["backend"] for row in rows]
    columns = [("SDK direct", "SDK direct pts/s"), ("threads", "threads pts/s"), ("delivery process", "process pts/s")]
    series: list[tuple[str, list[float | None]]] = [
        (label, [median_of(row[column]) for row in rows]) for label, column in columns
    ]
    return {
        "bench-throughput.svg": bar_chart(
            "Sustained throughput at 100 metrics per step",
            cats,
            series,
            value_label="points per second (log scale)",
            log=True,
        )
    }


def guarantees_chart(guarantees: str) -> dict[str, str]:
    """Each scenario's records as shares of those sent; a cell of ``a / b / c`` (variants of one scenario)
    becomes one bar per variant, a row without counts (``see below``) is left out."""
    columns = ("delivered", "spilled", "lost", "duplicated")
    cats: list[str] = []
    shares: dict[str, list[float | None]] = {column: [] for column in columns}
    for number_in_table, row in enumerate(markdown_table(guarantees), start=1):
        variants = max(len(row[column].split(" / ")) for column in ("sent", *columns))
        for variant in range(variants):

            def cell(column: str, variant: int = variant, row: Row = row) -> str:
                parts = row[column].split(" / ")
                return parts[min(variant, len(parts) - 1)]

            sent = number(cell("sent"))
            counts = {column: (sent if cell(column) == "all" else number(cell(column))) for column in columns}
            if not sent or counts["delivered"] is None:
                continue
            name = re.sub(r"[`*]", "", row["scenario"])
            name = name if len(name) <= 58 else name[:57] + "…"
            cats.append(f"{number_in_table}{'abc'[variant] if variants > 1 else ''}. {name}")
            for column in columns:
                value = counts[column]
                shares[column].append(None if value is None else 100 * value / sent)
    return {
        "guarantees.svg": bar_chart(
            "What each fault scenario's records became (share of those sent; rows as in the table)",
            cats,
            [(column, shares[column]) for column in columns],
            width=900,
            value_label="% of the records sent",
            stacked=True,
        )
    }


def import_chart(moving_runs: str) -> dict[str, str]:
    """The import benchmark's table (``python tools/bench.py --import``) in docs/moving-runs.md: per source,
    the SDK's reader (the first row) and ``tracking import`` (the row under it)."""
    table = moving_runs[moving_runs.index("## Import speed") :]
    cats: list[str] = []
    reader: list[float | None] = []
    ours: list[float | None] = []
    for row in markdown_table(table[: table.index("\n\n", table.index("|"))]):
        if row["source"]:
            cats.append(row["source"])
            reader.append(number(row["seconds"]))
        else:
            ours.append(number(row["seconds"]))
    return {
        "import-speed.svg": bar_chart(
            "Reading a source: the SDK's own reader and tracking import (s, best of --repeat)",
            cats,
            [("SDK's own reader", reader), ("tracking import", ours)],
            value_label="seconds",
        )
    }


def figures(benchmarks: str, guarantees: str | None = None, moving_runs: str | None = None) -> dict[str, str]:
    """Every chart, by file name: from the benchmarks page's text, the guarantees page's and moving-runs'
    (those two read from docs/ unless given)."""
    out = {**loop_charts(benchmarks), **caller_charts(benchmarks), **throughput_chart(benchmarks)}
    if guarantees is None:
        guarantees = (ROOT / "docs/guarantees.md").read_text(encoding="utf-8")
    out.update(guarantees_chart(section(guarantees, "guarantees")))
    if moving_runs is None:
        moving_runs = (ROOT / "docs/moving-runs.md").read_text(encoding="utf-8")
    out.update(import_chart(moving_runs))
    return {name: svg + "\n" for name, svg in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--benchmarks",
        type=Path,
        default=ROOT / "docs/benchmarks.md",
        help="the page with the printed benchmark tables",
    )
    parser.add_argument("--out", type=Path, default=FIGURES)
    parser.add_argument("--check", action="store_true", help="compare with the files in --out, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for name, svg in figures(args.benchmarks.read_text(encoding="utf-8")).items():
        path = args.out / name
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != svg:
                stale.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(svg, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    if stale:
        print(f"docs_charts: out of date: {', '.join(stale)} (run python tools/docs_charts.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
