"""Aim's remote tracking server (`aim server`, the jobs on ``aim://host:port``), from the worked example of
docs/distributed.md, SIGKILLed mid-run and started again on its port while a job logs to it.

Read back after the run with Aim's own reader (``aim.Repo``) on the server's repository folder, and
counted: sent, stored, duplicated, lost, spilled. Nothing may be lost; when the report is not ``ok`` at
finish, ``tracking replay`` of the spill must deliver the rest, counted again after it. Aim keeps one
value per step of a series, so a record stored twice shows as one point: each stored value is checked
to be its own step's.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

import deploy_jobs
import pytest
from deploy_servers import AimDeployment, require_module
from tracking_core.testing.reliability import tally

pytestmark = pytest.mark.reliability

READBACK = Path(__file__).resolve().parents[2] / "packages" / "aim" / "tests" / "aim_readback.py"


def _aim_readback() -> Any:
    """The Aim package's test reader (``open_repo`` indexes the repo as ``aim storage reindex`` does)."""
    spec = importlib.util.spec_from_file_location("aim_readback", READBACK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_back(repo: Path, run_hash: str) -> list[int]:
    from aim.storage.context import Context

    run = _aim_readback().get_run(repo, run_hash)
    steps, (values, _epochs, _times) = run.get_metric("train/loss", Context({})).data.items_list()
    assert all(value == 1.0 / (step + 1) for step, value in zip(steps, values)), "a point with another step's value"
    return [int(step) for step in steps]


@pytest.fixture
def deployment(tmp_path: Path):
    require_module("aim", "Aim is not installed (pip install 'aim<4')")
    started = AimDeployment(tmp_path / "server")
    started.folder.mkdir()
    try:
        started.start()
        yield started
    finally:
        started.cleanup()


def _check(scenario: str, deployment: AimDeployment, job: dict[str, Any], job_dir: Path) -> None:
    server = deployment.server
    assert server is not None
    server.stop()  # the repo is read as a folder, as `aim up` would read it
    sent = range(deploy_jobs.STEPS)
    spilled = deploy_jobs.spilled_steps(job["run_dir"], "aim")
    figures = tally(scenario, "aim", sent, _read_back(deployment.repo, job["run_id"]), spilled)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, f"{figures}\n{job['report']}"
    replayed = False
    if not job["ok"]:  # still owed at finish: the spill holds it, and a replay delivers it
        owed = deploy_jobs.spilled_records(job["run_dir"], "aim")
        assert figures["spilled"] > 0 and job["spilled"] == owed, f"{figures}\n{job['report']}"
        server.start(timeout=180)
        done = deploy_jobs.replay(job["run_dir"], "aim", job_dir)
        assert done.returncode == 0, done.stdout + done.stderr
        server.stop()
        replayed = True
        figures = tally(f"{scenario}, then tracking replay", "aim", sent, _read_back(deployment.repo, job["run_id"]))
    deploy_jobs.record(scenario, "aim", job, figures, replayed)
    images = _aim_readback().sequence(_aim_readback().get_run(deployment.repo, job["run_id"]), "image", "samples")
    assert list(images) == [deploy_jobs.STEPS - 1], f"the last step's image: {sorted(images)}"
    assert figures["delivered"] == deploy_jobs.STEPS and figures["lost"] == 0 and figures["duplicated"] == 0, figures


def test_server_killed_mid_run_and_restarted_on_its_port(deployment: AimDeployment, tmp_path: Path) -> None:
    server = deployment.server
    assert server is not None

    def server_killed() -> None:
        server.kill()
        time.sleep(1.0)
        server.start(timeout=180)

    job = deploy_jobs.run_job(deployment.init_call(), "aim", tmp_path, server_killed)
    _check("aim server SIGKILLed mid-run, restarted", deployment, job, tmp_path)


def test_server_killed_and_still_down_when_the_job_ends(deployment: AimDeployment, tmp_path: Path) -> None:
    """The server is down from the middle of the run until after the job's process has ended: what the
    job logged meanwhile must be in its spill (not only in Aim's client queue, which ends with the
    process), and ``tracking replay`` delivers it once the server is back."""
    server = deployment.server
    assert server is not None
    job = deploy_jobs.run_job(deployment.init_call(), "aim", tmp_path, server.kill, finish_timeout=5)
    job["down"] = "past the job's end"
    _check("aim server SIGKILLed mid-run, down until the job ended", deployment, job, tmp_path)
