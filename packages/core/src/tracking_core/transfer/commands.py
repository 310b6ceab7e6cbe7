"""The ``import``, ``export`` and ``compare`` subcommands: their arguments and what they do.

``tracking_core.cli`` only calls :func:`add_commands`; everything else stays in this package. The
arguments these share with the other commands come from ``tracking_core.cli.arguments``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..cli.arguments import add_command, add_logging_dir, add_project, add_quiet, add_system, progress


def _options(pairs: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option takes key=value, got {pair!r}")
        options[key] = value
    return options


def _import(args: argparse.Namespace) -> int:
    from .importing import import_runs

    report = import_runs(
        args.backend,
        args.source,
        logging_dir=args.logging_dir,
        project=args.project,
        options=_options(args.option),
        progress=progress(args),
    )
    if report.error is not None:
        print(str(report).split("\nstopped: ")[0])
        print(f"tracking import: error: {report.error}", file=sys.stderr)
        print(f"tracking import: {len(report.runs)} run(s) were imported before it (listed above)", file=sys.stderr)
        return 1
    print(report)
    return 0


def _export(args: argparse.Namespace) -> int:
    from .export import export_run
    from .resolve import resolve_run

    journal = resolve_run(args.run, args.logging_dir)
    output = args.output
    if args.format == "parquet" and output is None:
        output = f"{journal.parent.name}.parquet"
    text = export_run(journal, args.format, output, system=args.system)
    if text:
        sys.stdout.write(text)
    else:
        print(f"exported {journal.parent} to {output}", file=sys.stderr)
    return 0


def _compare(args: argparse.Namespace) -> int:
    import json

    from .compare import compare_runs

    comparison = compare_runs(args.runs, keys=args.keys, logging_dir=args.logging_dir, system=args.system)
    if args.json:
        print(json.dumps(comparison.to_json(), indent=1, default=str))
    elif args.html:
        Path(args.html).write_text(comparison.html(), encoding="utf-8")
        print(f"comparison of {len(comparison.runs)} runs written to {args.html}")
    else:
        print(comparison.text())
    return 0


def add_commands(commands: Any) -> None:
    """Add ``import``, ``export`` and ``compare`` to the ``tracking`` command's subparsers."""
    importing = add_command(
        commands,
        "import",
        _import,
        help="read another tracker's runs into journals (ready for replay)",
        description="Read every run a backend's local or offline store holds (also runs this library did not "
        "write) into run folders with a journal, keeping the original steps and times; run.json records where "
        "each came from. Importing the same run again rewrites it in place. The source is only read. Then "
        "`tracking replay <run> --to <backend>` sends it anywhere.",
    )
    importing.add_argument("backend", help="the source's backend: tensorboard, mlflow, dvclive, wandb, aim, ...")
    importing.add_argument("source", help="what to read: a folder, a file, a store URI or a run id (per backend)")
    add_project(importing, "project of the imported runs (default: the source's)")
    add_logging_dir(importing, "where the runs go (default: ./runs)")
    importing.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="importer option (repeatable)"
    )
    add_quiet(importing)

    export = add_command(
        commands,
        "export",
        _export,
        help="one run's points as CSV, JSON or Parquet",
        description="Write one run's points, one row per step and key, with its config and context alongside. "
        "CSV and JSON go to stdout unless --output; Parquet needs pyarrow and a file. The system samples "
        "(system/*) are left out unless --system.",
    )
    export.add_argument("run", help="a run folder, a journal, a run id or project/run")
    export.add_argument("--format", choices=("csv", "json", "parquet"), default="csv")
    export.add_argument("--output", "-o", default=None, metavar="FILE", help="write here instead of stdout")
    add_logging_dir(export, "where run ids are looked up")
    add_system(export, "also the run's system samples: rows with a sample index (column 'sample') and no step")

    compare = add_command(
        commands,
        "compare",
        _compare,
        help="several runs side by side: last/min/max (and best) per series, config differences",
        description="Compare runs: for each chosen series each run's last, min and max value (and the best, "
        "where the series' name says which way is better: a loss, an accuracy, ...), and the config keys whose "
        "values differ. --json for scripts; --html writes one self-contained page with the curves overlaid (no "
        "network needed to view it). The system samples (system/*) are left out unless --system.",
    )
    compare.add_argument("runs", nargs="+", metavar="RUN", help="run folders, journals, run ids or project/run")
    compare.add_argument("--keys", nargs="+", default=None, metavar="KEY", help="series names or patterns (val/*)")
    output = compare.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print JSON")
    output.add_argument("--html", default=None, metavar="FILE", help="write an HTML page")
    add_logging_dir(compare, "where run ids are looked up")
    add_system(compare, "also the runs' system samples, in a section of their own against time since each run started")
