"""The arguments several ``tracking`` commands share read and behave the same in each (``cli/arguments.py``)."""

from __future__ import annotations

import argparse

import pytest
from tracking_core.cli import build_parser
from tracking_core.cli.arguments import count, progress

SHARED = ("--logging-dir", "--system", "--quiet", "--project")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return dict(commands.choices)


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((action for action in parser._actions if flag in action.option_strings), None)


def test_a_shared_option_is_declared_the_same_in_every_command_that_takes_it():
    commands = _subcommands()
    takes = {flag: [name for name, sub in commands.items() if _option(sub, flag)] for flag in SHARED}
    assert takes == {
        "--logging-dir": ["demo", "replay", "import", "export", "compare"],
        "--system": ["show", "export", "compare"],
        "--quiet": ["replay", "import"],
        "--project": ["runs", "replay", "import"],
    }
    for flag, names in takes.items():
        shapes = {(type(_option(commands[name], flag)), _option(commands[name], flag).metavar) for name in names}
        assert len(shapes) == 1, (flag, shapes)


@pytest.mark.parametrize(
    "argv",
    [["replay", "RUN", "--quiet"], ["import", "tensorboard", "SOURCE", "--quiet"]],
    ids=lambda argv: argv[0],
)
def test_quiet_turns_the_progress_off_and_its_absence_leaves_it_to_the_command(argv):
    parser = build_parser()
    assert progress(parser.parse_args(argv)) is False
    assert progress(parser.parse_args(argv[:-1])) is None


def test_a_count_is_a_whole_number_not_below_zero():
    assert count("0") == 0 and count("12") == 12
    for text in ("-1", "1.5", "many"):
        with pytest.raises(argparse.ArgumentTypeError):
            count(text)
