"""A local-mode run of SwanLab 0.5.8 to 0.6.1, as the tracker uses a run (see :mod:`tracking_swanlab.older.v0_6_2.run`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracking_core.kit import warn_once

from ..v0_6_2.run import EarlierRun
from .concurrency import store_lock
from .durability import written_files


def stores_booleans_as_numbers() -> bool:
    """Whether this release turns a boolean config value into a number (``True`` -> 1; fixed in 0.6.2)."""
    try:
        from swanlab.data.run.config import json_serializable
    except ImportError:
        return False
    try:
        return json_serializable(True) is not True
    except Exception:
        return False


def _booleans(values: Any, prefix: str = "") -> list[str]:
    """The keys (``a.b`` for nested ones) whose value is a bool, lists included."""
    found: list[str] = []
    items = values.items() if isinstance(values, Mapping) else enumerate(values) if isinstance(values, list) else ()
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, bool):
            found.append(name)
        elif isinstance(value, (Mapping, list)):
            found.extend(_booleans(value, f"{name}."))
    return found


class _Config:
    """The run's ``config``; an update with a boolean says, once, that this release stores it as a number."""

    def __init__(self, config: Any, run: LocalRun) -> None:
        self._config = config
        self._run = run

    def update(self, values: Mapping[str, Any]) -> None:
        keys = _booleans(values)
        if keys and not self._run.booleans_noted and stores_booleans_as_numbers():
            self._run.booleans_noted = True
            message = (
                "this SwanLab release stores a boolean config value as a number (True as 1, False as 0; fixed in "
                f"0.6.2): {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}"
            )
            warn_once(self._run.owner.name, "config", message, reason="boolean-config")
            self._run.owner.add_note(message)
        self._config.update(values)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._config, name)


def _stored_experiment(run: Any) -> Any:
    """swanboard's ``Experiment`` row of the run (its local-mode callback keeps it as ``board.exp``), or ``None``."""
    operator = getattr(run, "_SwanLabRun__operator", None)
    callbacks = getattr(operator, "callbacks", None) or {}
    for callback in callbacks.values() if isinstance(callbacks, dict) else callbacks:
        experiment = getattr(getattr(callback, "board", None), "exp", None)
        if experiment is not None:
            return experiment
    return None


def stored_name_and_project(run: Any) -> tuple[str | None, str | None]:
    """The experiment name swanboard's store gave the run (it renames a name the project already has), and
    the project it is in (the store's one project, whatever project the run asked for)."""
    experiment = _stored_experiment(run)
    name = getattr(experiment, "name", None)
    try:
        project = experiment.project_id.name  # the foreign key, read on SwanLab's own connection
    except Exception:
        project = None
    return (name if isinstance(name, str) and name else None), (project if isinstance(project, str) else None)


class LocalRun(EarlierRun):
    """:class:`EarlierRun` with what SwanLab 0.5.8 to 0.6.1 add: the name kept in the store, a flush that
    fsyncs, and a note when a boolean config value is stored as a number."""

    def __init__(
        self, swanlab: Any, run: Any, *, name: str | None, owner: Any, environment_before: dict[str, str | None]
    ) -> None:
        super().__init__(swanlab, run, name=name, owner=owner, environment_before=environment_before)
        #: The experiment name and project in ``runs.swanlab``; ``name`` stays the one asked for (kept for a resume).
        stored = stored_name_and_project(run) if self.mode == "local" else (None, None)
        self.stored_name, self.stored_project = stored
        self._written = written_files(run) if self.mode == "local" else None
        self.booleans_noted = False
        self._lock_dir = Path(self.dir).parent if self.mode == "local" else None

    def log(self, data: dict[str, Any], step: int | None = None) -> Any:
        if self._lock_dir is None:
            return super().log(data, step=step)
        with store_lock(self._lock_dir):  # a new column creates rows another rank's process may create too
            return super().log(data, step=step)

    def finish(self, state: str = "success", error: str | None = None) -> None:
        if self._lock_dir is None:
            super().finish(state, error)
            return
        with store_lock(self._lock_dir):
            super().finish(state, error)

    @property
    def owner(self) -> Any:
        """The tracker this run reports to."""
        return self._owner

    @property
    def config(self) -> Any:
        return _Config(self._run.config, self)

    def wait_until_written(self) -> bool:
        if self.mode != "local":  # a cloud start of this line: its writer is the earlier line's
            return super().wait_until_written()
        if self._written is None:
            return False
        self._written.sync()
        return True
