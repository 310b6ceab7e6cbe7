"""A team's `mlflow server` (2 workers) on PostgreSQL, from the worked example of docs/distributed.md, with
its faults injected for real while a job logs to it:

- the database stopped mid-run (``pg_ctl stop -m immediate``: every PostgreSQL process quits at once, as
  in a crash) and started again about 5 s later; the server answers with errors meanwhile;
- the `mlflow server` SIGKILLed mid-run (its workers with it) and started again on the same port.

Each is read back through the server with ``MlflowClient.get_metric_history`` and counted: sent, stored,
duplicated, lost, spilled. Nothing may be lost or stored twice; when the report is not ``ok`` at finish,
``tracking replay`` of the spill must deliver the rest, counted again after it.
"""

from __future__ import annotations

import time
from pathlib import Path

import deploy_jobs
import pytest
from deploy_servers import MlflowDeployment, postgres_bin, require_module, unavailable
from tracking_core.testing.reliability import tally

pytestmark = pytest.mark.reliability

#: Seconds the database stays down.
DATABASE_DOWN = 5.0


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory):
    """The example's PostgreSQL and `mlflow server`, once for the module (MLflow's first start creates its
    tables, which takes a while); each test leaves them answering."""
    require_module("flask", "`mlflow server` needs full mlflow (pip install mlflow)")
    require_module("psycopg2", "MLflow's PostgreSQL store needs psycopg2 (pip install psycopg2-binary)")
    bin_dir = postgres_bin()
    if bin_dir is None:
        unavailable("PostgreSQL's programs (initdb, pg_ctl) are not installed (Debian: apt-get install postgresql)")
    started = MlflowDeployment(bin_dir, tmp_path_factory.mktemp("mlflow-postgres"))
    try:
        started.start()
        yield started
    finally:
        started.cleanup()


def _read_back(deployment: MlflowDeployment, run_id: str) -> list[int]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=deployment.url)
    losses = client.get_metric_history(run_id, "train/loss")
    assert all(point.value == 1.0 / (point.step + 1) for point in losses), "a point with another step's value"
    return [point.step for point in losses]


def _check_image(deployment: MlflowDeployment, run_id: str) -> None:
    """The image of the last step, listed through the server and stored in its --artifacts-destination."""
    from mlflow import MlflowClient

    listed = [info.path for info in MlflowClient(tracking_uri=deployment.url).list_artifacts(run_id, "images")]
    assert any(path.endswith(".png") and "samples" in path for path in listed), listed
    stored = [path.name for path in deployment.artifacts.rglob("*.png") if run_id in path.parts]
    assert stored, f"no image of run {run_id} under {deployment.artifacts}"


def _check(scenario: str, deployment: MlflowDeployment, job: dict, cwd: Path) -> None:
    sent = range(deploy_jobs.STEPS)
    spilled = deploy_jobs.spilled_steps(job["run_dir"], "mlflow")
    figures = tally(scenario, "mlflow", sent, _read_back(deployment, job["run_id"]), spilled)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, f"{figures}\n{job['report']}"
    assert job["errors"] >= 1, f"the fault never reached the backend: {job['report']}"
    replayed = False
    if not job["ok"]:  # still owed at finish: the spill holds it, and a replay delivers it
        owed = deploy_jobs.spilled_records(job["run_dir"], "mlflow")
        assert figures["spilled"] > 0 and job["spilled"] == owed, f"{figures}\n{job['report']}"
        done = deploy_jobs.replay(job["run_dir"], "mlflow", cwd)
        assert done.returncode == 0, done.stdout + done.stderr
        replayed = True
        figures = tally(f"{scenario}, then tracking replay", "mlflow", sent, _read_back(deployment, job["run_id"]))
    else:
        assert job["spilled"] == 0 and not spilled, job["report"]
    deploy_jobs.record(scenario, "mlflow", job, figures, replayed)
    _check_image(deployment, job["run_id"])
    assert figures["delivered"] == deploy_jobs.STEPS and figures["lost"] == 0 and figures["duplicated"] == 0, figures


def test_database_stopped_mid_run_and_started_again(deployment: MlflowDeployment, tmp_path: Path) -> None:
    postgres = deployment.postgres

    def database_down() -> None:
        postgres.stop_immediately()
        time.sleep(DATABASE_DOWN)
        postgres.start()

    job = deploy_jobs.run_job(deployment.init_call(), "mlflow", tmp_path, database_down)
    _check("PostgreSQL stopped (-m immediate) mid-run, started 5 s later", deployment, job, tmp_path)


def test_server_killed_mid_run_and_restarted_on_its_port(deployment: MlflowDeployment, tmp_path: Path) -> None:
    server = deployment.server
    assert server is not None

    def server_killed() -> None:
        server.kill()
        time.sleep(1.0)
        server.start(timeout=300)

    job = deploy_jobs.run_job(deployment.init_call(), "mlflow", tmp_path, server_killed)
    _check("mlflow server (2 workers) SIGKILLed mid-run, restarted", deployment, job, tmp_path)
