"""The arguments several ``tracking`` commands share, declared once for every command that takes them.

``cli/__init__.py`` (list, runs, show, demo, replay) and ``transfer/commands.py`` (import, export,
compare) build their subcommands with these, so ``--logging-dir``, ``--system``, ``--quiet`` and
``--project`` read and behave the same in every command.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

#: what a command runs: the parsed arguments in, the exit status out
Handler = Callable[[argparse.Namespace], int]


def add_command(commands: Any, name: str, handler: Handler, *, help: str, description: str) -> argparse.ArgumentParser:
    """A subcommand of ``tracking`` that runs ``handler``; ``commands`` is the parser's subparsers."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=handler)
    return parser


def add_logging_dir(parser: argparse.ArgumentParser, help: str, default: str | None = "runs") -> None:
    """``--logging-dir DIR``: where runs are written or looked up."""
    parser.add_argument("--logging-dir", default=default, metavar="DIR", help=help)


def add_project(parser: argparse.ArgumentParser, help: str) -> None:
    """``--project NAME``."""
    parser.add_argument("--project", default=None, help=help)


def add_system(parser: argparse.ArgumentParser, help: str) -> None:
    """``--system``: the run's system samples too (left out otherwise)."""
    parser.add_argument("--system", action="store_true", help=help)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet``: no progress output; :func:`progress` reads it."""
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def progress(args: argparse.Namespace) -> bool | None:
    """The ``progress`` argument of a long command: off with ``--quiet``, else its own choice (a terminal)."""
    return False if args.quiet else None


def count(text: str) -> int:
    """An argparse type: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value
