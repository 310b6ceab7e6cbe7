"""Counting what a fault cost: records sent, delivered, spilled, lost and duplicated.

Reliability tests read back what a backend stored (with its own reader) and hand the steps to
:func:`tally`; the figures are kept for the end of the test session, where the pytest plugin
:mod:`tracking_core.testing.pytest_plugin` prints them as one table. The scenarios run in child
processes (:func:`run_script`, :func:`start_in_own_session`) so a fault can end one without ending the tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FIGURES: list[dict[str, Any]] = []


def tally(
    scenario: str, backend: str, sent: Iterable[int], stored: Iterable[int], spilled: Iterable[int] = ()
) -> dict[str, Any]:
    """Compare the steps sent with the steps stored (and still waiting in a spill journal).

    ``lost``: sent, neither stored nor spilled. ``duplicated``: stored more than once, or both
    stored and spilled.
    """
    sent_steps = list(sent)
    stored_count = Counter(stored)
    spilled_count = Counter(spilled)
    expected = set(sent_steps)
    figures: dict[str, Any] = {
        "scenario": scenario,
        "backend": backend,
        "sent": len(sent_steps),
        "delivered": sum(1 for step in stored_count if step in expected),
        "spilled": sum(1 for step in spilled_count if step in expected and step not in stored_count),
        "lost": len(expected - set(stored_count) - set(spilled_count)),
        "duplicated": sum(count - 1 for count in stored_count.values())
        + sum(count - 1 for count in spilled_count.values())
        + len(set(stored_count) & set(spilled_count)),
    }
    FIGURES.append(figures)
    return figures


def table(rows: list[dict[str, Any]] | None = None) -> str:
    rows = FIGURES if rows is None else rows
    columns = ("scenario", "backend", "sent", "delivered", "spilled", "lost", "duplicated")
    cells = [columns] + [tuple(str(row[column]) for column in columns) for row in rows]
    widths = [max(len(line[index]) for line in cells) for index in range(len(columns))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def run_script(code: str, *args: str, cwd: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code *args`` (``code`` dedented) in ``cwd`` to its end, its stdout and stderr captured
    as text."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def start_in_own_session(code: str, *args: str, cwd: str | Path) -> subprocess.Popen[str]:
    """Start ``python -c code *args`` in a session of its own, so ``os.killpg(process.pid, SIGKILL)`` ends it
    and every process its SDK started; its stdout is a text pipe to read progress from, its stderr dropped."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
        start_new_session=True,
    )


def child_processes(parent: int | None = None) -> dict[int, str]:
    """The processes whose parent is ``parent`` (default: this one), by pid, with their command names, read
    from ``/proc``; a process that exits while it is read is left out, as it is no longer a child."""
    parent_pid = str(os.getpid() if parent is None else parent)
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            if fields[1] == parent_pid:
                children[int(entry)] = Path(f"/proc/{entry}/comm").read_text().strip()
        except (OSError, IndexError):  # gone between the listing and the read
            continue
    return children


def last_json_line(output: str) -> dict[str, Any]:
    """The JSON object a script printed last (an SDK may print its own lines before or after it)."""
    for line in reversed(output.strip().splitlines()):
        if line.startswith("{"):
            printed: dict[str, Any] = json.loads(line)
            return printed
    raise ValueError(f"the script printed no JSON object:\n{output[-2000:]}")


def waiting_records(run_dir: str | os.PathLike[str], backend: str) -> list[Any]:
    """The records ``backend`` still owes after its run ended: what the run's journal and its spill journal hold
    past its cursor (``run.json`` or its cursor file, whichever got further), for it. What a ``tracking replay``
    into the same run delivers to it."""
    from ..delivery.spill import backlog, spill_name
    from ..store.cursor import CursorFile, cursor_name
    from ..store.journal import JOURNAL_NAME, journal_files
    from ..store.manifest import RunManifest

    folder = Path(run_dir)
    cursor = RunManifest.load(folder).cursor(backend)
    cursor = -1 if cursor is None else cursor
    on_file = CursorFile.read(folder / cursor_name(backend))
    if on_file is not None:
        cursor = max(cursor, on_file[0])
    sources = [*journal_files(folder / JOURNAL_NAME), folder / spill_name(backend)]
    return list(backlog(sources, cursor, backend=backend))


def waiting_steps(run_dir: str | os.PathLike[str], backend: str) -> list[int]:
    """The metric steps of :func:`waiting_records`."""
    return [record.step for record in waiting_records(run_dir, backend) if record.kind == "log"]
