"""Start a run of SwanLab 0.5.8 to 0.6.1: the 0.6.2 line's start with ``"local"`` as the mode without an account.

Everything :mod:`tracking_swanlab.older.v0_6_2.startup` does holds here (the quiet defaults as flat settings,
``logdir``, the online check and the fallback, per-rank names, a resume as a new SwanLab run under the
saved name); on top:

* before a local start, swanboard and peewee are checked (:mod:`.dependencies`), and the start holds the
  store's lock (:mod:`.concurrency`);
* ``mode="offline"`` (which these releases refuse) is taken as local mode;
* SwanLab's local store holds one project per log folder (the first run's): a run of another project is
  stored in it, with one warning and a report note;
* swanboard keeps one experiment of each name per project, and so per log folder: a name already there is stored as ``<name>-1`` (``-2``, ...). For a name that was chosen --
  the saved name of a resumed run, the user's, a rank's -- one warning and a report note say so (the
  tracker keeps the chosen name, which a later resume asks for again); a name SwanLab made up (it picks
  one of a short list) is simply the stored one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracking_core.kit import warn_once

from ..v0_6_2.startup import Started
from ..v0_6_2.startup import start as earlier_start
from . import DATABASE, dependencies
from .concurrency import log_dir_for_init, store_lock
from .run import LocalRun


@contextlib.contextmanager
def _local_init(logdir: str | None) -> Iterator[None]:
    """Around a local-mode ``swanlab.init``: its packages checked, the store to itself."""
    dependencies.check()
    with store_lock(log_dir_for_init(logdir)):
        yield


def start(tracker: Any, swanlab: Any, online_check_timeout: float) -> Started:
    started = earlier_start(
        tracker,
        swanlab,
        online_check_timeout,
        without_account="local",
        around_local_init=_local_init,
        run_class=LocalRun,
    )
    run = started.run
    if not isinstance(run, LocalRun):
        return started
    database = Path(run.dir).parent / DATABASE
    if run.stored_project is not None and started.project and run.stored_project != started.project:
        message = (
            f"SwanLab's local store holds one project per log folder: this run of project {started.project!r} is "
            f"stored in project {run.stored_project!r} of {database} (give each project its own logging_dir)"
        )
        warn_once(tracker.name, "project", message, reason="one-project")
        tracker.add_note(message)
    if run.stored_name and run.stored_name != run.name:
        if not started.name_chosen:  # a name SwanLab made up (often taken: it picks one of a short list)
            run.name = run.stored_name
            return started
        message = (
            f"SwanLab's local store keeps one experiment of each name: this run is stored as {run.stored_name!r} "
            f"({run.name!r} is taken in {database})"
        )
        warn_once(tracker.name, "name", message, reason="renamed")
        tracker.add_note(message)
    return started
