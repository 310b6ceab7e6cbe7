"""The ``tracking`` command: list, runs, show, demo, replay, import, export, compare (entry point ``tracking_core.cli:main``).

Each command's module is imported when the command runs, so ``tracking --help`` stays instant.

- ``runs``: ``tracking runs`` — the runs under a logging directory.
- ``show``: ``tracking show`` — what one or more journals hold.
- ``demo``: ``tracking demo`` — a small real training run to every installed backend, read back.
- ``replay``: ``tracking replay`` — push a journal into backends after the fact.
- ``tabular``: plain-text tables for the output.
- ``arguments``: the arguments several commands share (``--logging-dir``, ``--system``, ``--quiet``, ...).
- ``import``, ``export``, ``compare``: registered by :mod:`tracking_core.transfer.commands`.
- ``tracking list`` reads ``tracking_core.contract.backends_info``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..__about__ import __version__
from .arguments import add_command, add_logging_dir, add_project, add_quiet, add_system, count, progress
from .tabular import format_table

EPILOG = """examples:
  tracking list                                  which backends are installed, and their SDKs
  tracking demo --backends jsonl,tensorboard     a small real training run, logged and read back
  tracking runs                                  every run under ./runs
  tracking show runs/demo/<run> --plot loss.png  what a run logged, with a plot
  tracking replay runs/demo/<run> --to mlflow    send a journal (or spill journal) to backends
  tracking import tensorboard ./tb_logs          another tracker's runs, as journals
  tracking compare RUN RUN --html cmp.html       runs side by side"""


def _list(args: argparse.Namespace) -> int:
    from ..contract.backends_info import describe_backends

    rows = [("backend", "package", "version", "SDK importable", "embedded default")]
    rows += [(b.name, b.package, b.version, b.sdk_status, b.embedded) for b in describe_backends()]
    print(format_table(rows))
    return 0


def _runs(args: argparse.Namespace) -> int:
    from .runs import find_runs, format_runs

    runs = find_runs(args.dir)
    if args.project:
        runs = [run for run in runs if run.project == args.project]
    if not runs:
        print(f"no runs under {args.dir}" + (f" for project {args.project!r}" if args.project else ""))
        return 0
    print(format_runs(runs))
    return 0


def _show(args: argparse.Namespace) -> int:
    from .show import PlotSkipped, show

    try:
        print(show(args.journals, plot=args.plot, rows=args.rows, system=args.system))
    except PlotSkipped as skipped:  # the summary was printed; the plot asked for is not there
        print(skipped.summary)
        print(f"tracking show: error: {skipped}", file=sys.stderr)
        return 1
    return 0


def _replay(args: argparse.Namespace) -> int:
    from .replay import replay

    report = replay(
        args.journal,
        args.to,
        logging_dir=args.logging_dir,
        project=args.project,
        progress=progress(args),
        new_run=args.new_run,
    )
    print(report)
    return 0 if report.ok else 1


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(logging_dir=args.logging_dir, steps=args.steps, backends=args.backends)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracking",
        description="Experiment tracking through one API: inspect backends and runs, replay journals, run the demo.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s (tracking-core) {__version__}")
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")

    add_command(
        commands,
        "list",
        _list,
        help="installed backends: package, version, SDK, embedded default",
        description="List every installed backend: its package and version, whether its SDK can be imported "
        "(checked without importing it), and where it writes with no account and no server.",
    )

    runs = add_command(
        commands,
        "runs",
        _runs,
        help="the runs under a logging directory",
        description="List the runs under a logging directory (or a project or run folder): project, run id, "
        "start time, steps, whether the run finished, and each backend's state from the run's run.json "
        "(resumable, started, spilled records). Reads files only; no backend SDK is imported.",
    )
    runs.add_argument("dir", nargs="?", default="runs", metavar="DIR", help="logging directory (default: ./runs)")
    add_project(runs, "only the runs of this project")

    show = add_command(
        commands,
        "show",
        _show,
        help="what one or more runs logged: metrics, tables, images (and a plot)",
        description="Summarise one or more journals: every metric logged (points, steps, last, min, max), the "
        "first rows of each table, the files of each image and figure. With --plot, one PNG overlays the runs' "
        "metrics and shows the last image of each key (needs matplotlib). The system samples (system/*) are "
        "only counted unless --system.",
    )
    show.add_argument("journals", nargs="+", metavar="RUN", help="a run folder or a journal file (several: compared)")
    show.add_argument("--plot", default=None, metavar="PNG", help="also write a plot to this PNG file")
    show.add_argument(
        "--rows", type=count, default=5, metavar="N", help="table rows to preview per table (default: 5; 0: none)"
    )
    add_system(
        show, "also the runs' system samples: a table each and, with --plot, panels against time since the start"
    )

    demo = add_command(
        commands,
        "demo",
        _demo,
        help="a small real training run logged to every installed backend",
        description="Train a logistic regression on generated data, log it to every installed backend (or "
        "--backends) in its embedded mode, then read back what each backend stored. Exit status 1 when a "
        "backend failed, or when 50 or more steps did not reach 80% validation accuracy.",
    )
    add_logging_dir(demo, "where every backend writes (default: ./runs)")
    demo.add_argument("--steps", type=count, default=200, metavar="N", help="training steps (default: 200)")
    demo.add_argument(
        "--backends", default=None, metavar="NAMES", help="comma-separated backend names (default: every installed one)"
    )

    replay = add_command(
        commands,
        "replay",
        _replay,
        help="deliver a journal (or spill journal) to backends",
        description="Deliver a journal or spill journal to backends, with the original steps and times. By "
        "default each backend reopens the run it had (run.json) and gets only the records it does not hold yet, "
        "so replaying twice stores nothing twice; --new-run copies the journal into a new run instead.",
    )
    replay.add_argument("journal", metavar="RUN", help="a run folder or a journal file")
    replay.add_argument(
        "--to",
        default=None,
        metavar="NAMES",
        help="backend name(s), comma-separated (default: a spill's own backend; for a run folder, the backends the run had)",
    )
    replay.add_argument("--new-run", action="store_true", help="copy into a new run instead of the original one")
    add_logging_dir(replay, "with --new-run: where the backends write (default: the journal's)", default=None)
    add_project(replay, "with --new-run: project name (default: the journal's)")
    add_quiet(replay)

    from ..transfer.commands import add_commands as add_transfer_commands

    add_transfer_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `tracking`: the help, as a successful answer
        parser.print_help()
        return 0
    try:
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except (FileNotFoundError, ValueError, ImportError) as error:
        print(f"tracking {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
