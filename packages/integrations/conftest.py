"""Read-back for the framework integrations' tests: each backend's data through its SDK's own reader.

Every integration test ends the same way: the framework's loop ran with tracking plugged in, and what
TensorBoard, MLflow and the jsonl journal hold is read back with TensorBoard's event accumulator,
a fresh ``MlflowClient`` and the journal reader. Shared here (pytest loads conftest files of the
folders above a test) so the three packages assert the same things the same way.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ReadBack:
    """One backend's run as its SDK reads it: config (flattened keys) and every metric point."""

    config: dict[str, Any] = field(default_factory=dict)
    history: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)

    def steps(self, key: str) -> list[int]:
        return [step for step, _ in self.history.get(key, [])]

    def values(self, key: str) -> list[Any]:
        return [value for _, value in self.history.get(key, [])]


def _tensorboard_config(log_dir: Path) -> dict[str, Any]:
    from tensorboard.backend.event_processing import plugin_event_accumulator
    from tensorboard.plugins.hparams import metadata

    accumulator = plugin_event_accumulator.EventAccumulator(str(log_dir), size_guidance={"tensors": 0})
    accumulator.Reload()
    content = accumulator.PluginTagToContent("hparams")
    found: dict[str, Any] = {}
    if metadata.SESSION_START_INFO_TAG in content:
        info = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
        found = {key: getattr(value, value.WhichOneof("kind")) for key, value in info.hparams.items()}
    return found


def _mlflow_config(tracker: Any) -> dict[str, Any]:
    from mlflow import MlflowClient

    return dict(MlflowClient(tracking_uri=tracker.tracking_uri).get_run(tracker.active_run_id).data.params)


def _jsonl_config(tracker: Any) -> dict[str, Any]:
    from tracking_core.intake.config import flatten_config
    from tracking_core.store.journal import JournalSummary

    return flatten_config(JournalSummary(tracker.journal_path).config)


def read_back(tracker: Any) -> ReadBack:
    """What the finished ``tracker``'s backend stored, read with that SDK's own reader."""
    readers = {
        "tensorboard": lambda t: _tensorboard_config(Path(t.log_dir)),
        "mlflow": _mlflow_config,
        "jsonl": _jsonl_config,
    }
    if tracker.name not in readers:
        raise AssertionError(f"no config reader for backend {tracker.name!r}")
    return ReadBack(config=readers[tracker.name](tracker), history=tracker.read_back_history())


@pytest.fixture
def read_back_of():
    return read_back


@pytest.fixture(autouse=True)
def isolated_mlflow(monkeypatch: pytest.MonkeyPatch) -> None:
    """No MLflow environment from the machine: each run uses the embedded store under its logging_dir."""
    for variable in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_RUN_ID", "MLFLOW_TAGS"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")


@pytest.fixture
def run_docs_page():
    return _run_docs_page


def _run_docs_page(page: str, tmp_path: Path) -> None:
    """Run a documentation page's python examples as the core's docs test does (its own script builder)."""
    spec = importlib.util.spec_from_file_location("docs_examples", ROOT / "packages/core/tests/test_docs_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = ROOT / "docs" / page
    assert module.examples(path), f"docs/{page} has no runnable example"
    result = subprocess.run(
        [sys.executable, "-c", module.script_for(path)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"an example of docs/{page} failed:\n{result.stderr[-4000:]}"
