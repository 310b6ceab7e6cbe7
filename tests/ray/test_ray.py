"""Ray Train and Ray Tune, for real: CPU workers in a local Ray cluster, each logging through ``tracking_core``.

Ray sets ``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` in its Train workers, so the rank rule applies as under
torchrun: one run per job (rank 0 runs the backends, every rank sees its id and folder) or ``per_rank``.
Ray ends a worker without letting it run exit hooks once its function returns, so a forgotten ``finish()``
leaves the backends with what they had: the run's journal holds everything, ``tracking runs`` and the next
run name the ``tracking replay`` that delivers the rest, counted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the Ray cell: hatch run ray:run")
from ray.train import RunConfig, ScalingConfig  # noqa: E402
from ray.train.torch import TorchTrainer  # noqa: E402

STEPS = 200


@pytest.fixture(scope="module", autouse=True)
def cluster(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    os.environ.update(HOME=str(home), RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    # one CPU for each of the two Train workers, one for the trainer, one spare: Tune runs two trials at a time
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _train(config: dict) -> None:
    """A Train worker: log STEPS steps, say what it saw, and finish unless told to forget."""
    import tracking_core

    run = tracking_core.init(
        "ray-train", log_with=["tensorboard", "mlflow"], logging_dir=config["logs"], per_rank=config["per_rank"]
    )
    for step in range(STEPS):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    rank = int(os.environ["RANK"])
    seen = {"rank": rank, "run_id": run.run_id, "run_dir": str(run.run_dir), "exists": run.run_dir.exists()}
    Path(config["logs"], f"rank-{rank}.json").write_text(json.dumps(seen))
    if not config["forget"]:
        report = run.finish()
        assert (rank != 0 and not config["per_rank"]) or report.ok, str(report)


def _fit(logs: Path, *, per_rank: bool = False, forget: bool = False) -> list[dict]:
    trainer = TorchTrainer(
        _train,
        train_loop_config={"logs": str(logs), "per_rank": per_rank, "forget": forget},
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        run_config=RunConfig(storage_path=str(logs / "ray"), name="train"),
    )
    result = trainer.fit()
    assert result.error is None, result.error
    return [json.loads((logs / f"rank-{rank}.json").read_text()) for rank in range(2)]


def _tensorboard_steps(run_dir: Path) -> list[int]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    tags = events.Tags()
    if "loss" in tags.get("scalars", []):
        return [event.step for event in events.Scalars("loss")]
    return [event.step for event in events.Tensors("loss")]


def _mlflow_steps(logs: Path, project: str) -> dict[str, list[int]]:
    """Per MLflow run (by name), the steps of ``loss``, read with MLflow's own client."""
    from mlflow import MlflowClient

    if not (logs / "mlflow.db").exists():
        return {}
    client = MlflowClient(tracking_uri=f"sqlite:///{logs / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(project)
    if experiment is None:
        return {}
    return {
        run.info.run_name: sorted(point.step for point in client.get_metric_history(run.info.run_id, "loss"))
        for run in client.search_runs([experiment.experiment_id])
    }


def _tracking(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tracking_core", *args], capture_output=True, text=True, timeout=300)


def test_one_run_per_job_every_rank_sees_the_job_run(tmp_path):
    seen = _fit(tmp_path)
    assert seen[0]["run_id"] == seen[1]["run_id"] and all(rank["exists"] for rank in seen)
    (run_dir,) = [p for p in (tmp_path / "ray-train").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert _tensorboard_steps(run_dir) == list(range(STEPS))
    assert list(_mlflow_steps(tmp_path, "ray-train").values()) == [list(range(STEPS))]


def test_per_rank_gives_each_worker_its_run(tmp_path):
    seen = _fit(tmp_path, per_rank=True)
    assert seen[0]["run_id"] == seen[1]["run_id"]  # the job's id; each rank keeps its folder in it
    for rank in seen:
        assert Path(rank["run_dir"]).name == f"rank-{rank['rank']}"
        assert _tensorboard_steps(Path(rank["run_dir"])) == list(range(STEPS))
    stored = _mlflow_steps(tmp_path, "ray-train")
    assert sorted(stored.values()) == [list(range(STEPS))] * 2


@pytest.mark.reliability
def test_a_worker_that_forgets_finish_loses_nothing_after_replay(tmp_path):
    from tracking_core.testing.reliability import tally

    seen = _fit(tmp_path, forget=True)
    run_dir = Path(seen[0]["run_dir"])
    listed = _tracking("runs", str(tmp_path))
    assert "killed" in listed.stdout, listed.stdout
    owed = [line for line in listed.stdout.splitlines() if line.startswith(f"{run_dir.name}: tracking replay")]
    if owed:  # what Ray's teardown cut off: one command names every backend that lacks records
        command = owed[0].split(": ", 1)[1].removesuffix(" delivers what its backends lack").split()
        replayed = _tracking(*command[1:])
        assert replayed.returncode == 0, replayed.stderr
    tensorboard = _tensorboard_steps(run_dir)
    (mlflow,) = _mlflow_steps(tmp_path, "ray-train").values()
    for backend, stored in (("tensorboard", tensorboard), ("mlflow", mlflow)):
        figures = tally("Ray Train worker without finish(), then replay", backend, range(STEPS), stored)
        assert (figures["lost"], figures["duplicated"]) == (0, 0), figures


def test_the_docs_example_runs_as_printed(tmp_path):
    """docs/distributed.md's Ray example, with its shared folder pointed here: two Train workers, then Tune's four
    trials two at a time, all in one MLflow store, each run exactly its own points."""
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "distributed.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"<!-- not-run: needs Ray[^>]*-->\n```python\n(.*?)```", page, re.DOTALL)
    code = code.replace('LOGS = "/shared/runs"', f"LOGS = {str(tmp_path)!r}")
    exec(compile(code, "docs/distributed.md (Ray example)", "exec"), {"__name__": "docs_example"})
    stored = _mlflow_steps(tmp_path, "ray-tune")
    assert stored == {f"lr-{lr}": list(range(50)) for lr in (0.1, 0.01, 0.001, 0.0001)}
    (train,) = _mlflow_steps(tmp_path, "ray-train").values()
    assert train == list(range(STEPS))
