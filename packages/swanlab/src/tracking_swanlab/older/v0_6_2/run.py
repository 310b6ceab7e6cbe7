"""The earlier line's SwanLab run behind the names the tracker calls on a 0.8+ ``Run``.

The tracker's mapping (``run.log``, ``run.config.update``, ``run.save``, ``run.finish``, ``run.alive``,
``run.dir``, ``run.id``, ``run.name``, ``run.mode``) is written once, against 0.8's run object. This
class gives the earlier line's ``SwanLabRun`` those names, and everything else passes through to it,
so ``tracker.run`` still offers what a user of that release knows (``run.public``, ``run.state``, ...).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

from tracking_core.kit import warn_once

from .hooks import kept_process_hooks

#: The process environment SwanLab's ``init`` writes its log folder into (and reads it back from).
LOG_DIR_VARIABLE = "SWANLAB_LOG_DIR"
#: ``swanlab.init`` also writes the mode it settled on there, where the next start would take it for the user's.
MODE_VARIABLE = "SWANLAB_MODE"
#: What ``swanlab.init`` writes into the process environment; the run's finish gives back what was there before.
INIT_WRITES = (LOG_DIR_VARIABLE, MODE_VARIABLE)


def environment_before_init() -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in INIT_WRITES}


class EarlierRun:
    """A started run of SwanLab 0.6.2 to 0.7.x, as the tracker uses a 0.8+ ``Run``."""

    def __init__(
        self, swanlab: Any, run: Any, *, name: str | None, owner: Any, environment_before: dict[str, str | None]
    ) -> None:
        self._swanlab = swanlab
        self._run = run
        self._owner = owner  # the tracker: warnings and report notes are its own
        self._environment_before = environment_before
        public = run.public
        self.dir = str(public.run_dir)
        #: This folder's own SwanLab run id, and the id of the run it is part of (the same unless it continues one).
        self.part_id = Path(self.dir).name.rsplit("-", 1)[-1]  # run-<time>-<id>, in every release of the line
        self.id = self.part_id
        self.name = name
        self.mode = "online" if run.mode == "cloud" else str(run.mode)
        self.url: str | None = None
        if self.mode == "online":
            self.url = public.cloud.experiment_url

    def continues(self, run_id: str) -> None:
        """This run is a later part of ``run_id`` (offline, this line writes each part as its own run)."""
        self.id = run_id

    @property
    def sdk_run(self) -> Any:
        """SwanLab's own ``SwanLabRun``."""
        return self._run

    @property
    def config(self) -> Any:
        return self._run.config

    @property
    def alive(self) -> bool:
        return bool(self._run.running)

    def log(self, data: dict[str, Any], step: int | None = None) -> Any:
        return self._run.log(data, step=step)

    def save(self, pattern: str, base_path: str, policy: str) -> list[str] | None:
        """``swanlab.save`` where the release has it (0.7.15 on); ``None`` (one warning, a report note) before."""
        save = getattr(self._swanlab, "save", None)
        if save is None:
            message = "this SwanLab release has no saved files (swanlab.save, added in 0.7.15): log_artifact(s) stores nothing"
            warn_once(self._owner.name, "log_artifact", message, reason="no-save")
            self._owner.add_note(message)
            return None
        saved: list[str] = save(pattern, base_path=base_path, policy=policy)
        return saved

    def finish(self, state: str = "success", error: str | None = None) -> None:
        """End the run as 0.8's ``Run.finish(state, error)`` would: this line has ``SwanLabRunState.SUCCESS`` and
        ``CRASHED`` (with its error); an ``"aborted"`` run is ``CRASHED`` here, and where ``finish`` takes
        ``interrupt`` (0.7.x) it is passed too, so that a cloud run ends ``ABORTED``."""
        from swanlab.data.run import SwanLabRunState

        crashed = state != "success"
        arguments: dict[str, Any] = {"state": SwanLabRunState.CRASHED if crashed else SwanLabRunState.SUCCESS}
        if crashed:
            arguments["error"] = error or state
        if state == "aborted" and "interrupt" in inspect.signature(self._run.finish).parameters:
            arguments["interrupt"] = True
        try:
            with kept_process_hooks():  # SwanLab's finish would reset sys.excepthook
                self._run.finish(**arguments)
        finally:
            # swanlab.init put its log folder and mode into the process environment, where the next run of
            # this process (and this backend's own check for a chosen folder or mode) would take them for the user's.
            for name, value in self._environment_before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def wait_until_written(self) -> bool:
        from .durability import wait_until_written

        return wait_until_written(self._run)

    @property
    def run_dir(self) -> Path:
        return Path(self.dir)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._run, name)
