"""The first Trackio releases (0.0.3 to 0.0.16), whose store numbers a run's rows itself, detected, not assumed.

Their store has no place for the step a row is logged at: 0.0.3 writes one CSV file per run, 0.0.4 to 0.0.15
a ``metrics`` table without a ``step`` column, and 0.0.16's ``SQLiteStorage.log`` fills its column itself
(``MAX(step) + 1``); no call of theirs takes a step. Their rows read back numbered 0, 1, 2, ... in the order
written, here as in Trackio's dashboard: the tracker says so once (:data:`STEPS_NOTE`).

What the writers here keep that those releases would lose:

* the config. The dashboard's ``/log`` handler, the path of ``Run.log`` in 0.0.4 to 0.0.16, saves an empty
  config over the run's with every row (``SQLiteStorage(project, run, {})``). :class:`StorageWriter` writes
  the rows with the run's own ``SQLiteStorage(project, run, config)`` instead, whose constructor saves the
  config: the same tables, the same JSON, the config kept. 0.0.3 keeps it in the run's ``config.json``, which
  its ``TrackioStorage`` writes when it is made (:class:`CsvWriter` makes one for a config logged later).
* a reopened run's rows. 0.0.3 keeps a CSV file's header in memory only: a second process writing to a run
  would rewrite the file with only its own keys' columns, blanking every earlier value. :class:`CsvWriter`
  gives the run's storage the file's header first.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any, Protocol

from ... import store
from . import reader

STEPS_NOTE = (
    "this trackio release stores no step with a row (steps are stored from trackio 0.0.17): Trackio numbers the "
    "run's rows 0, 1, 2, ... in the order they are written, whatever steps were logged"
)


#: What an import of such a store cannot hand over (a ``not carried`` line).
NO_STEPS = (
    "the steps the points were logged at: the trackio release that wrote this store kept none "
    "(Trackio numbered the rows 0, 1, 2, ...)"
)
#: What the start-up notice says instead of a view command where the release has no ``trackio show``.
NO_VIEW = "this trackio release has no 'trackio show'; its dashboard reads ./.trackio only"
#: What trackio 0.0.3 imports without declaring it.
UNDECLARED = ("gradio", "pandas")


def import_trackio() -> Any:
    """``import trackio``; where that fails for want of what 0.0.3 imports without declaring it, an error that
    says what to install."""
    try:
        import trackio
    except ModuleNotFoundError as error:
        if error.name not in UNDECLARED:
            raise
        raise ModuleNotFoundError(
            f"trackio needs {error.name} (trackio 0.0.3 imports it without declaring it): "
            "pip install gradio (it brings pandas)",
            name=error.name,
        ) from error
    return trackio


class RowWriter(Protocol):
    """Writes one run's rows (and its config) into the store of a release whose ``Run.log`` takes no step."""

    def log(self, values: dict[str, Any], step: int | None, **kwargs: Any) -> None: ...

    def save_config(self) -> None: ...


def numbers_rows() -> bool:
    """True when this release's store cannot hold the step given with a row (0.0.3 to 0.0.16: no ``bulk_log``)."""
    return not hasattr(store.sqlite_storage(), "bulk_log")


def csv_storage() -> Any:
    """Trackio 0.0.3's ``TrackioStorage`` (one CSV file per run) when that is the installed release, else None."""
    return getattr(sys.modules.get("trackio.storage"), "TrackioStorage", None)


def current_run(trackio: Any) -> Any:
    """The context variable holding ``trackio.init``'s run (its return value from 0.0.6; 0.0.16 and older keep
    the variable in the package, later releases in ``trackio.context_vars``)."""
    return getattr(trackio, "context_vars", trackio).current_run


def name_run(trackio: Any, kwargs: dict[str, Any]) -> None:
    """Give the run a name where the release needs one: 0.0.3 makes a name for an unnamed run but builds its
    run folder from the name it was given (``None``: a ``TypeError`` deep in ``os.path``)."""
    if csv_storage() is not None and not kwargs.get("name"):
        kwargs["name"] = trackio.utils.generate_readable_name()


def takes_resume(init: Any) -> bool:
    """True when this release's ``trackio.init`` reopens runs itself (``resume=``, 0.0.16+)."""
    try:
        return "resume" in inspect.signature(init).parameters
    except (TypeError, ValueError):
        return True


def drop_resume(init: Any, kwargs: dict[str, Any]) -> str | None:
    """Take ``resume`` out of ``kwargs`` when this release's ``init`` has none (before 0.0.16); the note to make."""
    if "resume" not in kwargs or takes_resume(init):
        return None
    return (
        f"this trackio release has no resume= (added in trackio 0.0.16): resume={kwargs.pop('resume')!r} is not "
        "passed, and a run named after an earlier run of the project continues it"
    )


def _check_kwargs(run: Any, kwargs: dict[str, Any]) -> None:
    if kwargs:
        inspect.signature(run.log).bind({}, **kwargs)  # Trackio's own TypeError for its own log


class StorageWriter:
    """0.0.4 to 0.0.16: one run's rows through ``SQLiteStorage(project, run, config).log``, in the calling thread.

    One storage object writes every row; a new one (its constructor saves the config) takes over whenever the
    config changes, so the run's config is the stored one from the start on.
    """

    def __init__(self, run: Any, project: str) -> None:
        self.run = run
        self.project = project
        self._storage = self._open()

    def _open(self) -> Any:
        options = {"dataset_id": self.run.dataset_id} if getattr(self.run, "dataset_id", None) else {}
        return store.sqlite_storage()(self.project, self.run.name, dict(self.run.config), **options)

    def log(self, values: dict[str, Any], step: int | None, **kwargs: Any) -> None:
        _check_kwargs(self.run, kwargs)
        self._storage.log(values)

    def save_config(self) -> None:
        self._storage = self._open()


class CsvWriter:
    """0.0.3: one run's rows through its own ``Run.log`` (a row of its CSV file), in the calling thread."""

    def __init__(self, run: Any, project: str) -> None:
        self.run = run
        self.project = project
        storage = run.storage
        if not storage.headers:  # the run's file exists already (a reopened run): its columns come first
            storage.headers = reader.columns(Path(storage.csv_path))

    def log(self, values: dict[str, Any], step: int | None, **kwargs: Any) -> None:
        _check_kwargs(self.run, kwargs)
        self.run.log(values)

    def save_config(self) -> None:
        csv_storage()(self.project, self.run.name, dict(self.run.config))  # its constructor writes config.json


def writer(run: Any, project: str) -> RowWriter:
    """The writer of this release's store for ``run``."""
    return CsvWriter(run, project) if csv_storage() is not None else StorageWriter(run, project)


def stored_config(storage_dir: Path, project: str, run_name: str) -> dict[str, Any]:
    """The config this release keeps for a run in ``storage_dir`` (``config.json``, or its ``configs`` row)."""
    if csv_storage() is not None:
        return reader.config(reader.run_folder(storage_dir, project, run_name))
    return store.first_config(store.project_database(storage_dir, project), project, run_name)


def keeps_config() -> bool:
    """True when this release's storage saves the config it is made with (0.0.3's ``TrackioStorage``, and
    ``SQLiteStorage`` of 0.0.4 to 0.0.16)."""
    made = csv_storage() or store.sqlite_storage()
    try:
        return made is not None and "config" in inspect.signature(made).parameters
    except (TypeError, ValueError):
        return False


def run_config(project: str, run: str) -> dict[str, Any] | None:
    """The run's config as this release's own reader finds it (its store location, as in a new process):
    ``SQLiteStorage.get_run_config`` (0.4+), the first releases' own (:func:`stored_config`); None where the
    release keeps none (0.0.17 to 0.3)."""
    import trackio.utils

    storage = store.sqlite_storage()
    if hasattr(storage, "get_run_config"):
        found: dict[str, Any] | None = storage.get_run_config(project, run)
        return found
    return stored_config(Path(trackio.utils.TRACKIO_DIR), project, run) if keeps_config() else None
