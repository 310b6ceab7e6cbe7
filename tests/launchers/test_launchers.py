"""Real launchers start real ranks (gloo over CPU torch); each backend is read back with its own reader.

torchrun with 2 and 4 processes, torchrun with two nodes on this machine (two agents meeting at a c10d
rendezvous), ``accelerate launch`` with 2 CPU processes, and ``srun``/``mpirun`` simulated by plain
processes carrying their rank variables. Every job runs under a deadline and is killed, process group and
all, when it passes it: a hang fails the test instead of holding CI.

The costly backends (MLflow's sqlite store, Aim's repo) take part in some jobs only, to keep the cell short;
``TRACKING_LAUNCH_BACKENDS=jsonl,tensorboard,mlflow,aim`` runs every job on every one of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from expect import check
from launch import Job, accelerate_launch, run_job, simulated, torchrun, train_args
from readback import read_all

ALL = "jsonl,tensorboard,mlflow,aim"
LIGHT = "jsonl,tensorboard"
STEPS = 5
JOB_TIMEOUT = 180.0  # seconds for a whole job; a healthy one takes 5 to 40 here


@dataclass(frozen=True)
class Scenario:
    name: str
    launcher: str  # torchrun, accelerate, slurm, mpi
    world: int
    nnodes: int = 1
    backends: str = LIGHT

    def commands(self, logging_dir: Path, cwd: Path, per_rank: bool, crash: tuple[int, int] | None):
        backends = os.environ.get("TRACKING_LAUNCH_BACKENDS") or self.backends
        args = train_args(logging_dir, backends, STEPS, per_rank, crash)
        if self.launcher == "torchrun":
            return torchrun(self.world // self.nnodes, self.nnodes, args)
        if self.launcher == "accelerate":
            return accelerate_launch(self.world, args, cwd)
        return simulated(self.launcher, self.world, args)

    def backend_list(self) -> list[str]:
        return (os.environ.get("TRACKING_LAUNCH_BACKENDS") or self.backends).split(",")


SCENARIOS = [
    Scenario("torchrun-2", "torchrun", 2, backends=ALL),
    Scenario("torchrun-4", "torchrun", 4),
    Scenario("torchrun-2-nodes", "torchrun", 2, nnodes=2),
    Scenario("accelerate-2", "accelerate", 2),
    Scenario("slurm-2", "slurm", 2, backends="jsonl,tensorboard,aim"),
    Scenario("mpi-4", "mpi", 4, backends="jsonl,mlflow"),
]


def launch(scenario: Scenario, tmp_path: Path, per_rank: bool = False, crash=None) -> tuple[Job, Path]:
    logging_dir = tmp_path / "runs"
    job = run_job(scenario.commands(logging_dir, tmp_path, per_rank, crash), cwd=tmp_path, timeout=JOB_TIMEOUT)
    assert not job.hung, f"{scenario.name}: a process was still running after {JOB_TIMEOUT} s\n{job.output()}"
    return job, logging_dir


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_one_run_per_job_holds_rank_zeros_points(scenario: Scenario, tmp_path: Path):
    job, logging_dir = launch(scenario, tmp_path)
    assert [p.returncode for p in job.processes] == [0] * len(job.processes), job.output()
    summaries = job.summaries
    assert sorted(summaries) == list(range(scenario.world)), job.output()
    assert [summaries[rank]["trackers"] for rank in sorted(summaries)] == [len(scenario.backend_list())] + [0] * (
        scenario.world - 1
    )
    assert all(summary["ok"] for summary in summaries.values()), f"{summaries}\n{job.output()}"
    runs = read_all(scenario.backend_list(), logging_dir, "launch")
    problems = check(scenario.name, runs, world=scenario.world, steps=STEPS, per_rank=False, seconds=job.seconds)
    assert not problems, "\n".join(problems)


CRASHES = [
    Scenario("torchrun-2-crash", "torchrun", 2, backends="jsonl,tensorboard,mlflow"),
    Scenario("slurm-2-crash", "slurm", 2),
]
CRASH_STEP = 3


@pytest.mark.parametrize("scenario", CRASHES, ids=lambda s: s.name)
def test_a_rank_that_crashes_ends_the_job_and_rank_zero_keeps_its_steps(scenario: Scenario, tmp_path: Path):
    """Rank 1 raises before step 3: rank 0 fails in that step's all_reduce and must exit (no hang at
    finish or at interpreter exit) with steps 0..2 stored in every backend."""
    job, logging_dir = launch(scenario, tmp_path, crash=(1, CRASH_STEP))
    assert all(p.returncode != 0 for p in job.processes), job.output()
    assert "rank 1 crashes at step 3" in job.output()
    runs = read_all(scenario.backend_list(), logging_dir, "launch")
    problems = check(scenario.name, runs, world=scenario.world, steps=CRASH_STEP, per_rank=False, seconds=job.seconds)
    assert not problems, "\n".join(problems) + "\n" + job.output()


PER_RANK = [
    Scenario("torchrun-2-per-rank", "torchrun", 2),  # the run id travels by broadcast
    Scenario("torchrun-4-per-rank", "torchrun", 4),
    Scenario("torchrun-2-nodes-per-rank", "torchrun", 2, nnodes=2, backends="jsonl"),
    Scenario("accelerate-2-per-rank", "accelerate", 2, backends="jsonl"),
    Scenario("slurm-2-per-rank", "slurm", 2),  # tracking starts before the process group: by file
    Scenario("mpi-4-per-rank", "mpi", 4, backends="jsonl"),
    # Every rank opens the same MLflow sqlite store and Aim repo, which none finds: the backends create
    # each store once, under a lock (MLflow's migration and Aim's repo creation race otherwise).
    Scenario("torchrun-4-per-rank-shared-stores", "torchrun", 4, backends="jsonl,mlflow,aim"),
]


@pytest.mark.parametrize("scenario", PER_RANK, ids=lambda s: s.name)
def test_per_rank_mode_gives_each_rank_its_own_run_in_one_group(scenario: Scenario, tmp_path: Path):
    job, logging_dir = launch(scenario, tmp_path, per_rank=True)
    runs = read_all(scenario.backend_list(), logging_dir, "launch")
    problems = check(scenario.name, runs, world=scenario.world, steps=STEPS, per_rank=True, seconds=job.seconds)
    assert [p.returncode for p in job.processes] == [0] * len(job.processes), job.output()
    summaries = job.summaries
    assert sorted(summaries) == list(range(scenario.world)), job.output()
    assert {summary["trackers"] for summary in summaries.values()} == {len(scenario.backend_list())}
    assert len({summary["run_id"] for summary in summaries.values()}) == 1, summaries  # rank 0's id everywhere
    failed = {rank: summary["failed"] for rank, summary in summaries.items() if summary["failed"]}
    assert not failed, f"backends that failed, per rank: {failed}\n{job.output()}"
    assert not problems, "\n".join(problems)


def test_per_rank_mode_when_a_rank_crashes(tmp_path: Path):
    """Every rank's run holds the steps it got through; the surviving ranks exit instead of hanging."""
    scenario = Scenario("slurm-2-per-rank-crash", "slurm", 2)
    job, logging_dir = launch(scenario, tmp_path, per_rank=True, crash=(1, CRASH_STEP))
    assert all(p.returncode != 0 for p in job.processes), job.output()
    runs = read_all(scenario.backend_list(), logging_dir, "launch")
    problems = check(scenario.name, runs, world=2, steps=CRASH_STEP, per_rank=True, seconds=job.seconds)
    assert not problems, "\n".join(problems) + "\n" + job.output()
