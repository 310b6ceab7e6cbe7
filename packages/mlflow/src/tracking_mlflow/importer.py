"""``tracking import mlflow <store>``: MLflow runs as journals, read through ``MlflowClient``.

``<store>`` is a tracking URI (``file:``, ``sqlite:``, ``http(s)://`` server, any database MLflow
reads), a ``mlruns`` folder, a SQLite file, an experiment folder or a run folder of a file store.
Options: ``run=<run id>`` (one run), ``experiment=<name or id>`` (one experiment; default: every
experiment the store holds).

Carried per run: every metric's full history (steps, values, timestamps in ms), params as the
config (MLflow keeps them as strings: numbers and booleans are read back as such; this library's
``config.json`` artifact, when there, gives the exact nested config), tags, start/end and status,
artifacts (copied), and the images, texts and tables this library logs as artifacts, as media.
Dataset inputs and logged-model metadata are listed as not carried.

The store is only read: a SQLite database is opened from a copy (MLflow migrates a database it opens),
and a server is read with paging and bounded retries on transient failures.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tracking_core.kit import Media, Point, SourceError, SourceRun

T = TypeVar("T")
PAGE_SIZE = 1000
ATTEMPTS = 4  # per call to the store; waits 0.5, 1, 2 s between them
_IMAGE_FILE = re.compile(
    r"^images/(?P<key>.+)(?P<sep>[+%])step(?P=sep)(?P<step>\d+)(?P=sep)timestamp(?P=sep)(?P<ms>\d+)(?P=sep)[0-9a-f-]+\.png$"
)
_STEP_FILE = re.compile(r"^(?P<kind>text|tables)/(?P<key>.+)/step_(?P<step>\d+)\.(txt|json)$")


def _retrying(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call`` retried on transient failures (connection errors, 5xx, rate limits), at most ``ATTEMPTS`` times."""
    from mlflow.exceptions import MlflowException

    for attempt in range(ATTEMPTS):
        try:
            return call(*args, **kwargs)
        except (ConnectionError, TimeoutError, MlflowException) as error:
            code = getattr(error, "error_code", "")
            transient = not isinstance(error, MlflowException) or code in (
                "TEMPORARILY_UNAVAILABLE", "INTERNAL_ERROR", "RESOURCE_EXHAUSTED", "REQUEST_LIMIT_EXCEEDED"
            )  # fmt: skip
            if not transient or attempt == ATTEMPTS - 1:
                raise
            time.sleep(0.5 * 2**attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def _param(text: str) -> Any:
    """A param's value as the config had it, as far as its string tells: numbers, booleans, else the text."""
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (int, float, list, dict)) else text


class _Store:
    """Where to read: a tracking URI (a SQLite file through a copy), plus which runs."""

    def __init__(self, source: str, options: dict[str, str]) -> None:
        self.location = source
        self.run_ids = [options["run"]] if options.get("run") else []
        self.experiment = options.get("experiment")
        self._copy: str | None = None
        path = Path(source.removeprefix("file://").removeprefix("file:"))
        if source.startswith("sqlite:///"):
            self.uri = self._sqlite(Path(source[len("sqlite:///") :]))
        elif "://" in source and not source.startswith("file:"):
            self.uri = source
        elif path.is_file():
            self.uri = self._sqlite(path)
        elif path.is_dir():
            self.uri = self._folder(path)
        else:
            raise SourceError(source, "not an MLflow tracking URI, mlruns folder or SQLite file")

    def _sqlite(self, path: Path) -> str:
        if not path.is_file():
            raise SourceError(str(path), "no such SQLite file")
        if not path.read_bytes()[:16].startswith(b"SQLite format 3"):
            raise SourceError(str(path), "not a SQLite database (its header is not SQLite's)")
        self._copy = tempfile.mkdtemp(prefix="tracking-import-")
        copy = Path(self._copy) / path.name
        shutil.copyfile(path, copy)
        self.location = str(path)
        return f"sqlite:///{copy}"

    def _folder(self, path: Path) -> str:
        path = path.resolve()
        if (path / "meta.yaml").is_file() and (path / "metrics").is_dir():  # a run folder
            self.run_ids = self.run_ids or [path.name]
            return path.parent.parent.as_uri()
        runs_inside = any((child / "meta.yaml").is_file() and (child / "metrics").is_dir() for child in path.iterdir())
        if (path / "meta.yaml").is_file() and runs_inside:  # an experiment folder
            self.experiment = self.experiment or path.name
            return path.parent.as_uri()
        return path.as_uri()

    def close(self) -> None:
        if self._copy:
            shutil.rmtree(self._copy, ignore_errors=True)


def _experiments(client: Any, wanted: str | None) -> list[Any]:
    if wanted:
        experiment = _retrying(client.get_experiment_by_name, wanted)
        if experiment is None and wanted.isdigit():
            experiment = _retrying(client.get_experiment, wanted)
        if experiment is None:
            raise SourceError(wanted, "no such experiment (by name or id) in the store")
        return [experiment]
    from mlflow.entities import ViewType

    found, token = [], None
    while True:
        page = _retrying(client.search_experiments, view_type=ViewType.ALL, max_results=PAGE_SIZE, page_token=token)
        found += list(page)
        token = page.token
        if not token:
            return found


def _runs(client: Any, store: _Store) -> Iterator[Any]:
    if store.run_ids:
        for run_id in store.run_ids:
            yield _retrying(client.get_run, run_id)
        return
    from mlflow.entities import ViewType

    for experiment in _experiments(client, store.experiment):
        token = None
        while True:
            page = _retrying(
                client.search_runs,
                [experiment.experiment_id],
                run_view_type=ViewType.ALL,
                max_results=PAGE_SIZE,
                order_by=["attributes.start_time ASC"],
                page_token=token,
            )
            yield from page
            token = page.token
            if not token:
                break


def _points(client: Any, run: Any, location: str) -> Iterator[Point]:
    read = 0
    for key in sorted(run.data.metrics):
        try:
            history = _retrying(client.get_metric_history, run.info.run_id, key)
        except Exception as error:
            raise SourceError(
                location, f"metric {key!r}: {type(error).__name__}: {error}", imported=f"{read} points of this run"
            ) from error
        for metric in history:
            read += 1
            yield Point(key, int(metric.step), metric.value, metric.timestamp / 1000.0)


def _global_tracking_uri(uri: str) -> contextlib.AbstractContextManager[None]:
    """MLflow 2.x resolves a server's ``mlflow-artifacts:`` URIs against the process-wide tracking URI, not
    the client's: for the download, that is the source's (MLflow's own switch, restored after)."""
    from mlflow.tracking._tracking_service import utils

    use = getattr(utils, "_use_tracking_uri", None)  # 2.16 to 3.17 have it
    return use(uri) if use is not None else contextlib.nullcontext()


@contextlib.contextmanager
def _no_progress_bar() -> Iterator[None]:
    """MLflow draws a tqdm bar per download when tqdm is installed; the import reports its own progress, so
    MLflow's switch for that bar is off while the import downloads (restored after)."""
    name = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
    before = os.environ.get(name)
    os.environ[name] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


class _Artifacts:
    """A run's artifacts, downloaded once into a scratch folder and handed out as media."""

    def __init__(self, client: Any, run_id: str) -> None:
        self.client, self.run_id = client, run_id
        self.config: dict[str, Any] | None = None
        self.folder: Path | None = None

    def download(self) -> None:
        if not _retrying(self.client.list_artifacts, self.run_id):
            return
        self.folder = Path(tempfile.mkdtemp(prefix="tracking-import-"))
        with _global_tracking_uri(self.client.tracking_uri), _no_progress_bar():
            _retrying(self.client.download_artifacts, self.run_id, "", str(self.folder))
        exact = self.folder / "config.json"
        if exact.is_file():
            try:
                self.config = json.loads(exact.read_text(encoding="utf-8"))
            except ValueError:
                self.config = None

    def media(self) -> Iterator[Media]:
        if self.folder is None:
            return
        for path in sorted(p for p in self.folder.rglob("*") if p.is_file()):
            relative = path.relative_to(self.folder).as_posix()
            yield self._medium(relative, path)

    def remove(self) -> None:
        """Drop the scratch copy (once the run was written: its media point into it)."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _medium(self, relative: str, path: Path) -> Media:
        image = _IMAGE_FILE.match(relative)
        if image:
            key = image["key"].replace("~", "/") if image["sep"] == "+" else image["key"].replace("#", "/")
            return Media("image", key, int(image["step"]), path.read_bytes(), int(image["ms"]) / 1000.0)
        stepped = _STEP_FILE.match(relative)
        if stepped and stepped["kind"] == "text":
            return Media("text", stepped["key"], int(stepped["step"]), path.read_text(encoding="utf-8"))
        if stepped:
            try:
                table = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(table, dict) and "columns" in table and "data" in table:
                    return Media("table", stepped["key"], int(stepped["step"]), table)
            except ValueError:
                pass
        return Media("artifact", relative, None, str(path))


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Yield each run of the store ``source`` names (one run with ``run=``, one experiment with ``experiment=``)."""
    store = _Store(source, dict(options or {}))
    artifacts: _Artifacts | None = None
    try:
        from mlflow import MlflowClient

        names: dict[str, str] = {}
        try:
            if store.uri.startswith(
                "file:"
            ):  # MLflow 3 opens a file store only when allowed; reading old ones is the point
                os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
            client = MlflowClient(tracking_uri=store.uri)
        except Exception as error:
            raise SourceError(store.location, f"cannot open the MLflow store: {error}") from error
        done = 0
        try:
            for run in _runs(client, store):
                if artifacts is not None:
                    artifacts.remove()
                experiment_id = run.info.experiment_id
                if experiment_id not in names:
                    names[experiment_id] = _retrying(client.get_experiment, experiment_id).name
                artifacts = _Artifacts(client, run.info.run_id)
                artifacts.download()
                params = {key: _param(value) for key, value in run.data.params.items()}
                not_carried = []
                inputs = getattr(run, "inputs", None)
                datasets = getattr(inputs, "dataset_inputs", None) or []
                if datasets:
                    not_carried.append(f"{len(datasets)} dataset input(s) (names kept in tags only where MLflow did)")
                yield SourceRun(
                    backend="mlflow",
                    source_id=run.info.run_id,
                    name=run.info.run_name or run.info.run_id,
                    project=names[experiment_id],
                    started=run.info.start_time / 1000.0 if run.info.start_time else None,
                    ended=run.info.end_time / 1000.0 if run.info.end_time else None,
                    status=run.info.status,
                    config=artifacts.config if artifacts.config is not None else params,
                    tags=dict(run.data.tags),
                    points=_points(client, run, f"{store.location} run {run.info.run_id}"),
                    media=artifacts.media(),
                    not_carried=not_carried,
                    location=f"{store.location} run {run.info.run_id}",
                )
                done += 1
        except SourceError:
            raise
        except Exception as error:
            raise SourceError(store.location, f"{type(error).__name__}: {error}", imported=f"{done} run(s)") from error
    finally:
        if artifacts is not None:
            artifacts.remove()
        store.close()
