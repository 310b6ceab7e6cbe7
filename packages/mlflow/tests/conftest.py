"""Shared fixtures: a clean MLflow environment per test and readers built on ``MlflowClient``."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from tracking_core.notices import reset_warnings

# Variables that would send a test's run somewhere else or change how it is created.
_MLFLOW_ENV = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_EXPERIMENT_NAME",
    "MLFLOW_EXPERIMENT_ID",
    "MLFLOW_RUN_ID",
    "MLFLOW_TAGS",
    "MLFLOW_NESTED_RUN",
    "MLFLOW_ENABLE_ASYNC_LOGGING",
    "MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
    "MLFLOW_HTTP_REQUEST_TIMEOUT",
)
# MLflow 3: <key>+step+<n>+timestamp+<ms>+<uuid>.png, "/" in the key as "~"; MLflow 2.x: "%" and "#".
_IMAGE_FILE = re.compile(
    r"^(?P<key>.+)(?P<sep>[+%])step(?P=sep)(?P<step>\d+)(?P=sep)timestamp(?P=sep)\d+(?P=sep)[0-9a-f-]+\.png$"
)
_STEP_FILE = re.compile(r"^(?P<key>.+)/step_(?P<step>\d+)\.(txt|json)$")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mlflow_server: starts a real `mlflow server` on 127.0.0.1 (needs full mlflow)")


@pytest.fixture(scope="session")
def schema_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("schema-cache")


@pytest.fixture(scope="session")
def _session_server(tmp_path_factory: pytest.TempPathFactory, schema_cache_dir: Path):
    """One real `mlflow server` for every test that neither kills nor restarts it (each start costs 20-60 s
    on a busy machine). Tests keep apart by experiment name; a test that kills it starts it again."""
    pytest.importorskip("flask", reason="`mlflow server` needs full mlflow (pip install mlflow)")
    from .mlflow_server import MlflowServer

    server = MlflowServer(tmp_path_factory.mktemp("shared-server"))
    with pytest.MonkeyPatch.context() as patch:  # the session's schema cache, as clean_mlflow_env sets it per test
        patch.setenv("TRACKING_CACHE_DIR", str(schema_cache_dir))
        server.start(timeout=240)  # its imports and store take a while on a loaded machine
    yield server
    server.stop()


@pytest.fixture
def mlflow_server(_session_server):
    """The session's `mlflow server`, answering: started again if an earlier test left it down."""
    _session_server.ensure_answering(timeout=240)
    return _session_server


@pytest.fixture(autouse=True)
def clean_mlflow_env(monkeypatch: pytest.MonkeyPatch, schema_cache_dir: Path):
    for variable in _MLFLOW_ENV:
        monkeypatch.delenv(variable, raising=False)
    # migrated empty stores are cached here rather than in the user's ~/.cache (tracking_core.kit.store_cache)
    monkeypatch.setenv("TRACKING_CACHE_DIR", str(schema_cache_dir))
    monkeypatch.delenv("TRACKING_STORE_CACHE", raising=False)
    # The tracker sets this itself when unset; keep that change from leaking past the test.
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", os.environ.get("MLFLOW_DISABLE_TELEMETRY", "true"))
    reset_warnings()  # trackers used directly (no dispatcher) warn once per process otherwise
    yield


class Reader:
    """Reads a run back the way a user would: a fresh ``MlflowClient`` on the run's tracking URI."""

    def __init__(self, tracking_uri: str, run_id: str) -> None:
        from mlflow import MlflowClient

        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.run_id = run_id

    @classmethod
    def of(cls, tracker: Any) -> Reader:
        return cls(tracker.tracking_uri, tracker.active_run_id)

    @property
    def run(self) -> Any:
        return self.client.get_run(self.run_id)

    def metrics(self) -> dict[str, dict[int, float]]:
        return {
            key: {m.step: m.value for m in self.client.get_metric_history(self.run_id, key)}
            for key in self.run.data.metrics
        }

    def files(self, path: str | None = None) -> list[str]:
        found = []
        for info in self.client.list_artifacts(self.run_id, path):
            found.extend(self.files(info.path) if info.is_dir else [info.path])
        return found

    def text(self, path: str) -> str:
        with tempfile.TemporaryDirectory() as folder:
            return Path(self.client.download_artifacts(self.run_id, path, folder)).read_text(encoding="utf-8")

    def json(self, path: str) -> Any:
        return json.loads(self.text(path))

    def texts(self) -> dict[str, dict[int, str]]:
        out: dict[str, dict[int, str]] = {}
        for path in self.files("text"):
            match = _STEP_FILE.match(path[len("text/") :])
            out.setdefault(match["key"], {})[int(match["step"])] = self.text(path)
        return out

    def images(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for path in self.files("images"):
            match = _IMAGE_FILE.match(path[len("images/") :])
            if match:  # the +compressed.webp previews are skipped
                out.setdefault(match["key"].replace("~", "/").replace("#", "/"), []).append(int(match["step"]))
        return out

    def tables(self) -> dict[str, list[list[Any]]]:
        out: dict[str, list[list[Any]]] = {}
        for path in self.files("tables"):
            match = _STEP_FILE.match(path[len("tables/") :])
            name = match["key"] if match else path[len("tables/") : -len(".json")]
            out.setdefault(name, []).extend(self.json(path)["data"])
        return out


@pytest.fixture
def reader_of():
    return Reader.of
