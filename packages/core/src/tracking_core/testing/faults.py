"""Backends that fail on request, importable by path: the delivery process can build them too.

Trackers defined in a test module cannot be run by the delivery process (``delivery="process"``
builds each backend from its importable class), so the fault-injecting backends that reliability
tests need there live here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..backends.jsonl import JsonlTracker
from ..contract.tracker import GeneralTracker

DOWN_FILE = "down"
STUCK_FILE = "stuck"


class SwitchedJournal(JsonlTracker):
    """A journal (``switched.jsonl`` in the run folder) that refuses writes while ``<run folder>/down`` exists,
    and whose writes hang (a call on a dead connection) while ``<run folder>/stuck`` exists.

    A test creates and removes those files to take the "server" away and bring it back, from any process.
    """

    name = "switched"

    def __init__(self, run_name: str, logging_dir: Any = None, **kwargs: Any) -> None:
        super().__init__(run_name, logging_dir, journal_name="switched.jsonl", **kwargs)

    def _refuse_while_down(self) -> None:
        while (self.run_dir / STUCK_FILE).exists():
            time.sleep(0.01)
        if (self.run_dir / DOWN_FILE).exists():
            raise ConnectionError("connection refused (the test switched this backend off)")

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self._refuse_while_down()
        super().log(values, step, **kwargs)

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        self._refuse_while_down()
        super().log_batch(entries)


class UnsavableState(JsonlTracker):
    """A journal whose ``resume_state`` cannot be written to ``run.json`` (not JSON): the run goes on,
    without a way to resume this backend, in either delivery mode."""

    name = "unsavable"

    def __init__(self, run_name: str, logging_dir: Any = None, **kwargs: Any) -> None:
        super().__init__(run_name, logging_dir, journal_name="unsavable.jsonl", **kwargs)

    def resume_state(self) -> dict[str, Any]:
        return {"handle": {1, 2, 3}}  # a set: JSON has none


class SwitchedPoints(GeneralTracker):
    """Appends ``[step, values]`` lines to ``<run folder>/points.jsonl``, and refuses writes while
    ``<run folder>/down`` exists: a backend that is not the journal, for the delivery process as for threads."""

    name = "switched-points"
    requires_logging_directory = False
    durable_on_return = True

    def __init__(self, run_name: str, logging_dir: Any = None, **kwargs: Any) -> None:
        super().__init__()

    @property
    def tracker(self) -> None:
        return None

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self.log_batch([(values, step, kwargs)])

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        assert self.run_context is not None
        folder = Path(self.run_context.run_dir)
        if (folder / DOWN_FILE).exists():
            raise ConnectionError("connection refused (the test switched this backend off)")
        with open(folder / "points.jsonl", "a") as points:
            points.write("".join(json.dumps([step, values]) + "\n" for values, step, _ in entries))
