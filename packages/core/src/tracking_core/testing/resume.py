"""Scaffolding for a backend's resume tests: a tracker started as the dispatcher starts it, and the
state a process killed with SIGKILL saved before it died.

A resumed tracker gets its saved state back from ``run.json``, so :func:`started_tracker` sends the
state through JSON first: a backend whose state does not survive that fails here as it would in use.
Needs no pytest.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..contract.tracker import GeneralTracker, RunContext
from .reliability import last_json_line

T = TypeVar("T", bound=GeneralTracker)

# The child a test kills: a tracker with no saved state logs ``loss``, flushes, prints its resume state
# and kills itself before finish(), so whatever the SDK had not written by then is gone.
_KILLED_CHILD = """
import importlib, json, os, signal, sys
from tracking_core.testing.resume import log_loss, started_tracker
module, name, logging_dir, steps = sys.argv[1:]
tracker = started_tracker(getattr(importlib.import_module(module), name), logging_dir)
log_loss(tracker, range(int(steps)))
tracker.flush()
print(json.dumps(tracker.resume_state()), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def loss(step: int) -> float:
    """The value logged at ``step``: distinct at every step, so a point read back at the wrong step shows."""
    return 1.0 / (step + 1)


def log_loss(tracker: GeneralTracker, steps: Iterable[int]) -> None:
    for step in steps:
        tracker.log({"loss": loss(step)}, step=step)


def started_tracker(
    tracker_class: type[T],
    logging_dir: str | Path,
    resume_state: dict[str, Any] | None = None,
    *,
    project: str = "resume",
    **kwargs: Any,
) -> T:
    """A started tracker as the dispatcher sets it up, in run ``run-1`` of ``project``; ``resume_state``
    (what an earlier ``resume_state()`` returned) goes through JSON as it does through ``run.json``."""
    logging_dir = Path(logging_dir)
    build: Callable[..., T] = tracker_class  # a backend's constructor, not the base class's
    tracker = build(project, logging_dir=logging_dir, **kwargs)
    resume = json.loads(json.dumps(resume_state)) if resume_state is not None else None
    tracker.run_context = RunContext(project, "run-1", logging_dir / project / "run-1", logging_dir, resume=resume)
    tracker.start()
    return tracker


def finished_run(
    tracker_class: type[T],
    logging_dir: str | Path,
    steps: Iterable[int],
    resume_state: dict[str, Any] | None = None,
    *,
    project: str = "resume",
    config: dict[str, Any] | None = None,
    **kwargs: Any,
) -> T:
    """A tracker from :func:`started_tracker` that stored ``config`` (if given), logged ``loss`` at ``steps``
    and finished: one process's part of a run, ready to be read back or resumed from its ``resume_state()``."""
    tracker = started_tracker(tracker_class, logging_dir, resume_state, project=project, **kwargs)
    if config is not None:
        tracker.store_init_configuration(config)
    log_loss(tracker, steps)
    tracker.finish()
    return tracker


def state_of_a_killed_run(
    tracker_class: type[GeneralTracker],
    logging_dir: str | Path,
    *,
    cwd: str | Path,
    env: Mapping[str, str] | None = None,
    steps: int = 10,
    timeout: float = 150,
) -> dict[str, Any]:
    """Run a process that starts ``tracker_class`` with :func:`started_tracker`, logs ``loss`` at steps
    ``0 .. steps - 1``, flushes and kills itself with SIGKILL; return the resume state it printed first.

    ``env`` is the child's whole environment (default: this process's), e.g. without the SDK's own
    variables that would point it at a server.
    """
    arguments = [tracker_class.__module__, tracker_class.__qualname__, str(logging_dir), str(steps)]
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_CHILD, *arguments],
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if killed.returncode != -signal.SIGKILL:
        raise AssertionError(f"the child ended with {killed.returncode}, not SIGKILL:\n{killed.stderr[-3000:]}")
    return last_json_line(killed.stdout)
