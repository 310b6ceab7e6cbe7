"""What differs in the Trackio releases before 0.24 that this backend supports, detected, not assumed.

* Before 0.18, a local ``trackio.init`` launches Trackio's Gradio dashboard on a local port and the run
  sends its rows to it through ``gradio_client.Client.predict("/bulk_log", ...)``; the dashboard's handler
  writes them to the same SQLite store. :func:`in_process_dashboard` gives ``trackio.init`` a client that
  calls those handlers in this process instead: the same code writes the same rows, but no web server is
  started, no port is opened and no HTTP round trip sits between the run and its store. (0.0.3 has no
  client: its ``init`` launches the dashboard unless a flag says one runs, and its runs write themselves.)
* Before 0.24 a run has no ``id`` (its rows are keyed by run name), no public-enough flush hook
  (``_flush_queues_inline``), and ``SQLiteStorage.get_run_config`` takes the run name.
* Up to at least 0.23, ``trackio.Table(columns=..., data=...)`` ignores ``columns`` (its docstring says so):
  0.5 stores bare row lists (no column names), 0.8 to 0.23 rows under integer keys, which Trackio's writer
  refuses, losing the whole batch of rows they were in. :func:`table` hands those releases a DataFrame
  with the column names.
* 0.5 has no ``trackio.Histogram`` (0.6 has); before 0.30 there are no artifacts (the tracker notes both).
* 0.2.8 to 0.3.3 store every image as RGBA, a PNG file's too (:func:`made_rgba`: a note says so).
* Before 0.5.2 the store is always ``$HF_HOME/trackio`` (``TRACKIO_DIR`` is ignored): :func:`store_setting`
  names the variable that points a new process of the release at the run's store.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import re
import shlex
import sys
import threading
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import store
from . import v0_0_3

#: The first release whose local runs write to SQLite themselves (no dashboard server in between).
LOCAL_WRITES = (0, 18)
#: The write-failure key this backend reports for rows the in-process dashboard could not store
#: (Trackio 0.24+ records its own under the same ``write-*`` prefix).
WRITE_FAILURE = "write-logs-to-sqlite"

_client_swap = threading.Lock()


def release() -> tuple[int, ...]:
    """The installed Trackio release as numbers (``0.23.0`` -> ``(0, 23, 0)``); ``()`` when unknown."""
    try:
        found = re.match(r"(\d+(?:\.\d+)*)", metadata.version("trackio"))
    except metadata.PackageNotFoundError:
        return ()
    return tuple(int(part) for part in found.group(1).split(".")) if found else ()


def _dashboard_handlers() -> Any:
    """The module holding the dashboard's API functions (``bulk_log``, ``log``, ...) in this release."""
    for name in ("trackio.ui.main", "trackio.ui"):
        module = sys.modules.get(name)
        if module is not None and (hasattr(module, "bulk_log") or hasattr(module, "log")):
            return module
    raise RuntimeError("this trackio release has no dashboard handlers this backend knows (trackio.ui.main.bulk_log)")


class InProcessClient:
    """Stands in for the ``gradio_client.Client`` a pre-0.18 run talks to: each ``predict(api_name=...)``
    calls the dashboard's handler of that name here. A failed write is kept in :attr:`failures` (and the
    batch sender thread lives on) so the tracker can report it instead of losing the thread silently."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.failures: set[str] = set()

    def predict(self, *args: Any, api_name: str, **kwargs: Any) -> Any:
        handler = getattr(_dashboard_handlers(), api_name.strip("/"))
        try:
            return handler(*args, **kwargs)
        except Exception as error:
            self.failures.add(WRITE_FAILURE)
            import warnings

            warnings.warn(f"trackio could not store a batch of rows ({type(error).__name__}: {error})", stacklevel=1)
            return None


def needs_in_process_dashboard() -> bool:
    found = release()
    return bool(found) and found < LOCAL_WRITES


@contextlib.contextmanager
def in_process_dashboard(trackio: Any, context: contextvars.Context) -> Iterator[None]:
    """Around ``trackio.init`` (run in ``context``): a pre-0.18 release gets :class:`InProcessClient` and
    no dashboard server; a later one is left alone."""
    if not needs_in_process_dashboard():
        yield
        return
    # init() launches the dashboard only when no server is current in its context: name this process. The
    # variable moved from the package (0.0.16 and older) to trackio.context_vars; 0.0.3 keeps a flag instead
    # and has no client at all (its runs write their CSV files themselves).
    holder = getattr(trackio, "context_vars", trackio)
    if not hasattr(holder, "current_server"):
        context.run(holder.current_ui.set, True)
        yield
        return
    context.run(holder.current_server.set, "in-process")
    with _client_swap:  # trackio.init looks `Client` up in its module when it makes the run's client
        original = trackio.Client
        trackio.Client = InProcessClient
        try:
            yield
        finally:
            trackio.Client = original


def _client_of(run: Any) -> Any:
    """The run's dashboard client (``Run.client`` before trackio 0.0.20)."""
    return getattr(run, "_client", None) or getattr(run, "client", None)


def remote_url(run: Any) -> str | None:
    """Where the run sends its rows when that is not this process's store (a Space or a server)."""
    if isinstance(_client_of(run), InProcessClient):
        return None
    url = getattr(run, "url", None)
    return str(url) if url else None


def drop_group(init: Any, kwargs: dict[str, Any]) -> str | None:
    """Take ``group`` out of ``kwargs`` when this release's ``init`` has none (0.3 and older); the note to make."""
    if "group" not in kwargs:
        return None
    try:
        parameters = inspect.signature(init).parameters
    except (TypeError, ValueError):
        return None
    if "group" in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    group = kwargs.pop("group")
    return f"this trackio release has no run groups: the run is not in group {group!r}"


def write_failures(run: Any) -> set[str]:
    """Trackio's own recorded write failures (0.23+) and those of the in-process dashboard."""
    failures = set(getattr(run, "_warned_failures", ()))
    client = _client_of(run)
    if isinstance(client, InProcessClient):
        failures |= client.failures
    return {key for key in failures if key.startswith("write-")}


def flush_queued_rows(run: Any) -> bool:
    """Write the run's queued rows now, as its sender thread would; False when this release has no such path."""
    lock, queued = getattr(run, "_client_lock", None), getattr(run, "_queued_logs", None)
    if lock is None or queued is None:
        return False
    flush_inline = getattr(run, "_flush_queues_inline", None)
    if flush_inline is not None:  # 0.23+
        with lock:
            flush_inline()
        return True
    write_local = getattr(run, "_write_logs_to_sqlite", None)  # 0.18 - 0.22
    client = getattr(run, "_client", None)
    if write_local is None and not isinstance(client, InProcessClient):
        return False
    with lock:
        rows = queued.copy()
        queued.clear()
        if rows:
            if write_local is not None and getattr(run, "_is_local", False):
                write_local(rows)
            elif isinstance(client, InProcessClient):
                client.predict(api_name="/bulk_log", logs=rows, hf_token=None)
    return True


def stored_config(storage: Any, project: str, run: Any) -> Any:
    """``SQLiteStorage.get_run_config`` by run id (0.24+) or by run name (before)."""
    try:
        by_id = "run_id" in inspect.signature(storage.get_run_config).parameters
    except (TypeError, ValueError):
        by_id = False
    if by_id and getattr(run, "id", None):
        return storage.get_run_config(project, run_id=run.id)
    return storage.get_run_config(project, run.name)


def stores_config() -> bool:
    """True when this release's store keeps the run's config: its reader ``SQLiteStorage.get_run_config``
    (0.4+), or a storage made with the config (0.0.3 to 0.0.16: :func:`tracking_trackio.older.v0_0_3.keeps_config`)."""
    return hasattr(store.sqlite_storage(), "get_run_config") or v0_0_3.keeps_config()


def reads_trackio_dir() -> bool:
    """True when this release takes its store from ``TRACKIO_DIR`` (0.5.2+): its ``_get_trackio_dir`` looks the
    variable up. Before, the store is always ``$HF_HOME/trackio``."""
    import trackio.utils

    locate = getattr(trackio.utils, "_get_trackio_dir", None)
    return "TRACKIO_DIR" in getattr(getattr(locate, "__code__", None), "co_consts", ())


def store_setting(storage_dir: Path) -> str:
    """The environment setting that makes a new process of this release (``trackio show``, its reader) use
    ``storage_dir``: ``TRACKIO_DIR``, or ``HF_HOME`` for a release that ignores it (the store is then
    ``$HF_HOME/trackio``, and the tracker's is ``<logging_dir>/trackio``)."""
    if reads_trackio_dir() or storage_dir.name != "trackio":
        return f"TRACKIO_DIR={shlex.quote(str(storage_dir))}"
    return f"HF_HOME={shlex.quote(str(storage_dir.parent))}"


RGBA_NOTE = "this trackio release stores every image as RGBA (trackio 0.3.4 keeps the file): an opaque alpha is added"


def made_rgba(image: Any, source: str) -> bool:
    """True when this ``trackio.Image`` of the file ``source`` was converted to RGBA, which the file is not
    (0.2.8 to 0.3.3 convert every image when it is made, a file's too; later releases copy a file)."""
    converted = getattr(image, "_pil", None)
    if getattr(converted, "mode", None) != "RGBA":
        return False
    from PIL import Image

    with Image.open(source) as original:
        return bool(original.mode != "RGBA")


def table(trackio: Any, columns: list[str], rows: list[list[Any]]) -> Any:
    """A ``trackio.Table`` that keeps its column names on this release."""
    made = trackio.Table(columns=columns, data=rows)
    if _keeps_column_names(getattr(made, "data", None), columns):
        return made
    import pandas  # the releases that drop the names depend on pandas themselves

    return trackio.Table(dataframe=pandas.DataFrame(rows, columns=columns))


def _keeps_column_names(stored: Any, columns: list[str]) -> bool:
    """True when a Table holds its rows under the column names: a DataFrame with those columns, or row dicts
    (0.5 keeps ``data`` as the bare lists, 0.8 to 0.23 as a DataFrame with numbered columns)."""
    if hasattr(stored, "columns"):
        return list(stored.columns) == list(columns)
    if isinstance(stored, list):
        return all(isinstance(row, dict) for row in stored)
    return True  # a layout this backend does not know: leave it to Trackio
