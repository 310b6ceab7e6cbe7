"""The worked migrations of docs/moving-runs.md, run as printed there, on runs written with the source's SDK
directly, and read back with the target's own reader.

Each needs two backends' SDKs, so it runs in the every-backend ``migrate`` environment with
tests/test_migrations.py (``hatch run migrate:run``, a step of ``.ci/run``) and skips elsewhere.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "moving-runs.md"
VIEWERS = ("mlflow ui", "aim up")  # the last line of each: starts a server to look at the result


def commands(heading: str) -> str:
    """The bash block under ``heading`` in docs/moving-runs.md, without the line that starts a viewer."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"### {re.escape(heading)}\n+```bash\n(.*?)```", text, re.S)
    assert match, f"docs/moving-runs.md has no bash block under {heading!r}"
    lines = [line for line in match.group(1).splitlines() if not line.startswith(VIEWERS)]
    assert len(lines) >= 2
    return "\n".join(lines)


def run_as_printed(script: str, cwd: Path) -> None:
    """``script`` in bash (stop at the first failure), with this environment's ``tracking`` on PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr


def loss(step: int, seed: int) -> float:
    return 1.0 / (step + 1 + seed)


def test_wandb_offline_runs_into_mlflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mlflow")
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.chdir(tmp_path)
    for seed in range(2):  # the way a training script writes them: W&B's own SDK, offline
        # mode given as well: a process that used W&B before keeps the settings it read then (not WANDB_MODE)
        run = wandb.init(
            project="demo", dir=str(tmp_path), mode="offline", config={"lr": 0.1 * (seed + 1), "seed": seed}
        )
        for step in range(20):
            run.log({"train/loss": loss(step, seed), "acc": step / 20}, step=step)
        run.finish()
    monkeypatch.delenv("WANDB_SERVICE", raising=False)

    script = commands("Worked migration: W&B offline runs into MLflow")
    run_as_printed(script, tmp_path)
    run_as_printed(script, tmp_path)  # "run the loop again after a failure": nothing arrives twice

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'moved' / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "demo"]
    runs = {run.data.params["seed"]: run for run in client.search_runs([experiment.experiment_id])}
    assert sorted(runs) == ["0", "1"]
    for seed, run in runs.items():
        assert run.data.params["lr"] == str(0.1 * (int(seed) + 1))
        history = client.get_metric_history(run.info.run_id, "train/loss")
        assert [(m.step, m.value) for m in history] == [(step, loss(step, int(seed))) for step in range(20)]
        assert len(client.get_metric_history(run.info.run_id, "acc")) == 20


def test_tensorboard_logs_into_aim(tmp_path: Path) -> None:
    pytest.importorskip("aim")
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    for version in range(2):  # as Lightning's TensorBoardLogger leaves them: version_N/, hparams as torch writes them
        writer = EventFileWriter(str(tmp_path / "lightning_logs" / f"version_{version}"))
        start = plugin_data_pb2.SessionStartInfo()
        start.hparams["lr"].number_value = 0.01 * (version + 1)
        start.hparams["optimizer"].string_value = "adam"
        content = plugin_data_pb2.HParamsPluginData(session_start_info=start, version=0).SerializeToString()
        meta = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="hparams", content=content)
        )
        hparams = summary_pb2.Summary.Value(tag="_hparams_/session_start_info", metadata=meta)
        writer.add_event(event_pb2.Event(wall_time=1_700_000_000.0, summary=summary_pb2.Summary(value=[hparams])))
        for step in range(30):
            value = summary_pb2.Summary.Value(tag="train/loss", simple_value=loss(step, version))
            event = event_pb2.Event(
                wall_time=1_700_000_000.0 + step, step=step, summary=summary_pb2.Summary(value=[value])
            )
            writer.add_event(event)
        writer.close()

    run_as_printed(commands("Worked migration: TensorBoard logs into Aim"), tmp_path)

    from aim import Repo

    runs = {}
    for run in Repo(str(tmp_path / "moved")).iter_runs():
        (metric,) = [m for m in run.metrics() if m.name == "train/loss"]
        steps, (values, _epochs, _times) = metric.data.items_list()
        runs[run.get("hparams")["lr"]] = (run.experiment, list(zip(steps, values)))
    assert sorted(runs) == [0.01, 0.02]
    for version, lr in enumerate(sorted(runs)):
        experiment, points = runs[lr]
        assert experiment == "resnet-sweep"
        assert [step for step, _ in points] == list(range(30))
        assert [value for _, value in points] == pytest.approx([loss(step, version) for step in range(30)], rel=1e-6)
