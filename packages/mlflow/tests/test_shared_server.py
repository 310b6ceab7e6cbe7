"""Several jobs at once on ONE real `mlflow server` (sqlite store): two jobs in one experiment and, at the
same time, the four ranks of a job in per-rank mode. Each process logs values that name it; read back with ``MlflowClient``,
each run must hold exactly its own points, none lost, none twice, none of another process's.

The jobs are plain processes (rank variables set as torchrun would): concurrency on the server is what is
tested here, not a launcher (tests/launchers does that, with torch). The server is the session's
(conftest.py); the experiments here are this module's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from tracking_core.testing.reliability import tally

from .mlflow_server import MlflowServer, free_port

pytestmark = [pytest.mark.reliability, pytest.mark.mlflow_server]

STEPS = 100

JOB = """
import json, sys, time
import tracking_core
experiment, writer, steps, per_rank = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "per-rank"
run = tracking_core.init(experiment, log_with="mlflow", logging_dir="runs", per_rank=per_rank, flush_interval=0.5)
started = time.monotonic()
for step in range(steps):
    run.log({"writer": float(writer), "value": writer * 1_000_000.0 + step}, step=step)
    if step % 25 == 24:
        time.sleep(0.05)  # the two writers interleave on the server
report = run.finish(timeout=120)
backend = report.backends["mlflow"]
print(json.dumps({"writer": writer, "ok": report.ok, "run_id": run.get_tracker("mlflow").active_run_id,
                  "errors": backend.errors, "recovered": backend.recovered, "spilled": backend.spilled,
                  "seconds": round(time.monotonic() - started, 2)}))
"""


def _writers(server: MlflowServer, cwd, writers: list[tuple[str, bool, dict]]) -> list[dict]:
    """Start one process per ``(experiment, per_rank, env)`` at once; every one must end within the deadline."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RANK", "WORLD_SIZE", "MASTER_"))}
    base.update(MLFLOW_TRACKING_URI=server.url, MLFLOW_DISABLE_TELEMETRY="true")
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", JOB, experiment, str(index), str(STEPS), "per-rank" if per_rank else "job"],
            cwd=cwd,
            env={**base, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index, (experiment, per_rank, env) in enumerate(writers)
    ]
    results = []
    deadline = time.monotonic() + 240
    for process in processes:
        try:
            out, err = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            raise AssertionError("a writer did not finish within 240 s") from None
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _check(server: MlflowServer, experiment: str, results: list[dict], scenario: str) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=server.url)
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id], max_results=100)
    assert len(runs) == len(results), [run.info.run_name for run in runs]
    by_id = {run.info.run_id: run for run in runs}
    for result in results:
        writer = result["writer"]
        assert result["ok"], result
        assert result["run_id"] in by_id, (result, list(by_id))
        values = client.get_metric_history(result["run_id"], "value")
        writers = {point.value for point in client.get_metric_history(result["run_id"], "writer")}
        figures = tally(scenario, f"mlflow writer {writer}", range(STEPS), [point.step for point in values])
        assert writers == {float(writer)}, f"writer {writer}'s run holds points of writers {writers}"
        assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
        assert all(point.value == writer * 1_000_000.0 + point.step for point in values), "points mixed up"
    print(f"{scenario}: " + "; ".join(f"writer {r['writer']}: {r['errors']} errors, {r['seconds']} s" for r in results))


def test_two_jobs_and_a_per_rank_job_at_once_on_one_server(mlflow_server, tmp_path):
    """Two jobs started together in one experiment (they race to create it, then interleave their batches),
    and at the same time the four ranks of a per-rank job (RANK/WORLD_SIZE as torchrun sets them)."""
    job = {"WORLD_SIZE": "4", "MASTER_PORT": str(free_port())}  # MASTER_PORT tells this job from others
    writers = [("two-jobs", False, {}), ("two-jobs", False, {})]
    writers += [("per-rank", True, {**job, "RANK": str(rank)}) for rank in range(4)]
    results = _writers(mlflow_server, tmp_path, writers)
    assert len({result["run_id"] for result in results}) == 6
    _check(mlflow_server, "two-jobs", results[:2], "2 jobs, one server")
    _check(mlflow_server, "per-rank", results[2:], "4 ranks per-rank, one server")
    # Bounded retries: nothing needed one here; a failing request would show in errors/spilled.
    assert all(result["errors"] == 0 and result["spilled"] == 0 for result in results), results


def test_four_ranks_that_create_one_sqlite_store_at_once(tmp_path):
    """Per-rank mode's default layout: every rank opens ``<logging_dir>/mlflow.db``, which none finds, at the
    same moment. MLflow's schema migration is not safe against that; the backend must serialise it."""
    job = {"WORLD_SIZE": "4", "MASTER_PORT": str(free_port())}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RANK", "WORLD_SIZE", "MASTER_"))}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", JOB, "fresh-store", str(rank), "20", "per-rank"],
            cwd=tmp_path,
            env={**base, **job, "RANK": str(rank), "MLFLOW_DISABLE_TELEMETRY": "true"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(4)
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(result["ok"] and result["errors"] == 0 for result in results), results
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/runs/mlflow.db")
    experiment = client.get_experiment_by_name("fresh-store")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(int(run.data.metrics["writer"]) for run in runs) == [0, 1, 2, 3]
