"""The ``tracking`` command: list, demo, replay, show."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _table(rows: list[Sequence[str]]) -> str:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _list(args: argparse.Namespace) -> int:
    from .backends_info import describe_backends

    rows = [("backend", "package", "version", "SDK importable", "embedded default")]
    rows += [(b.name, b.package, b.version, b.sdk_status, b.embedded) for b in describe_backends()]
    print(_table(rows))
    return 0


def _show(args: argparse.Namespace) -> int:
    from .show import show

    print(show(args.journal, plot=args.plot))
    return 0


def _replay(args: argparse.Namespace) -> int:
    from .replay import replay

    report = replay(
        args.journal,
        args.to,
        logging_dir=args.logging_dir,
        project=args.project,
        progress=False if args.quiet else None,
        new_run=args.new_run,
    )
    print(report)
    return 0 if report.ok else 1


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(logging_dir=args.logging_dir, steps=args.steps, backends=args.backends)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tracking", description="Experiment tracking through one API.")
    commands = parser.add_subparsers(dest="command", required=True)

    listing = commands.add_parser("list", help="installed backends: package, version, SDK, embedded default")
    listing.set_defaults(handler=_list)

    demo = commands.add_parser("demo", help="a small real training run logged to every installed backend")
    demo.add_argument("--logging-dir", default="runs", help="where every backend writes (default: ./runs)")
    demo.add_argument("--steps", type=int, default=200)
    demo.add_argument("--backends", default=None, help="comma-separated subset (default: all installed)")
    demo.set_defaults(handler=_demo)

    replay = commands.add_parser(
        "replay",
        help="deliver a journal (or spill journal) to backends",
        description="Deliver a journal or spill journal to backends. By default each backend reopens the run it "
        "had (run.json) and gets only the records it does not hold yet, so replaying twice stores nothing twice.",
    )
    replay.add_argument("journal", help="journal file or run directory")
    replay.add_argument("--to", default=None, help="backend name(s), comma-separated (default: a spill's own backend)")
    replay.add_argument("--new-run", action="store_true", help="copy into a new run instead of the original one")
    replay.add_argument("--logging-dir", default=None, help="with --new-run: where (default: the journal's)")
    replay.add_argument("--project", default=None, help="with --new-run: project name (default: the journal's)")
    replay.add_argument("--quiet", action="store_true", help="no progress output")
    replay.set_defaults(handler=_replay)

    show = commands.add_parser("show", help="summary table of a journal")
    show.add_argument("journal", help="journal file or run directory")
    show.add_argument("--plot", default=None, metavar="PNG", help="also plot the metrics (needs matplotlib)")
    show.set_defaults(handler=_show)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (FileNotFoundError, ValueError, ImportError) as error:
        print(f"tracking {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
