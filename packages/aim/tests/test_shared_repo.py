"""Several jobs at once in ONE Aim repo: two jobs in one experiment and, at the same time, the four ranks of
a job in per-rank mode. Each process logs values that name it; read back with ``aim.Repo``, each run must hold exactly its
own points, none lost, none twice, none of another process's.

The shared repo is made first, as ``aim init`` makes it before a team points its jobs at it; the last
test has the ranks of a job create it themselves, all at once.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tracking_core.testing.reliability import tally

_spec = importlib.util.spec_from_file_location("_tracking_aim_readback", Path(__file__).with_name("aim_readback.py"))
readback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readback)

pytestmark = pytest.mark.reliability

STEPS = 100

JOB = """
import json, sys, time
import tracking_core
experiment, writer, steps, per_rank = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "per-rank"
run = tracking_core.init(experiment, log_with="aim", logging_dir=sys.argv[5], per_rank=per_rank, flush_interval=0.5)
started = time.monotonic()
for step in range(steps):
    run.log({"writer": float(writer), "value": writer * 1_000_000.0 + step}, step=step)
    if step % 25 == 24:
        time.sleep(0.05)  # the writers interleave in the repo
report = run.finish(timeout=120)
backend = report.backends["aim"]
print(json.dumps({"writer": writer, "ok": report.ok, "run_hash": run.get_tracker("aim").run_hash,
                  "errors": backend.errors, "spilled": backend.spilled, "last_error": backend.last_error,
                  "seconds": round(time.monotonic() - started, 2)}))
"""


def _writers(repo: Path, cwd: Path, writers: list[tuple[str, bool, dict]]) -> list[dict]:
    """Start one process per ``(experiment, per_rank, env)`` at once; every one must end within the deadline."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "WORLD_SIZE", "MASTER_", "AIM_"))}
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                JOB,
                experiment,
                str(index),
                str(STEPS),
                "per-rank" if per_rank else "job",
                str(repo),
            ],
            cwd=cwd,
            env={**base, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index, (experiment, per_rank, env) in enumerate(writers)
    ]
    results = []
    deadline = time.monotonic() + 180
    for process in processes:
        try:
            out, err = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            raise AssertionError("a writer did not finish within 180 s") from None
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _check(repo: Path, experiment: str, results: list[dict], scenario: str) -> None:
    for result in results:
        assert result["ok"] and result["errors"] == 0 and result["spilled"] == 0, result
    opened = readback.open_repo(repo)
    stored = {run.hash: run.experiment for run in opened.iter_runs()}
    hashes = [run_hash for run_hash, name in stored.items() if name == experiment]
    assert sorted(hashes) == sorted(result["run_hash"] for result in results), (stored, results)
    for result in results:
        writer = result["writer"]
        series = readback.metrics(opened.get_run(result["run_hash"]))
        figures = tally(scenario, f"aim writer {writer}", range(STEPS), list(series["value"]))
        assert set(series["writer"].values()) == {float(writer)}, f"writer {writer}'s run holds other writers' points"
        assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
        assert all(value == writer * 1_000_000.0 + step for step, value in series["value"].items()), "points mixed up"
    print(f"{scenario}: " + "; ".join(f"writer {r['writer']}: {r['errors']} errors, {r['seconds']} s" for r in results))


def test_two_jobs_and_a_per_rank_job_at_once_in_one_repo(tmp_path):
    """Two jobs in one experiment and, at the same time, the four ranks of a per-rank job, in a repo made
    first as ``aim init`` makes it."""
    from aim import Repo

    repo = tmp_path / "shared"
    Repo.from_path(str(repo), init=True)  # what `aim init --repo <path>` does
    job = {"WORLD_SIZE": "4", "MASTER_PORT": "29517"}  # MASTER_PORT tells this job from others
    writers = [("two-jobs", False, {}), ("two-jobs", False, {})]
    writers += [("per-rank", True, {**job, "RANK": str(rank)}) for rank in range(4)]
    results = _writers(repo, tmp_path, writers)
    _check(repo, "two-jobs", results[:2], "2 jobs, one Aim repo")
    _check(repo, "per-rank", results[2:], "4 ranks per-rank, one Aim repo")


def test_four_ranks_that_create_the_repo_at_once(tmp_path):
    """Per-rank mode's default layout: every rank opens ``<logging_dir>/.aim``, which none finds, at the same
    moment. Aim raises a bare RuntimeError in a process that finds another's half-made repo; the backend
    must create it once, under a lock."""
    job = {"WORLD_SIZE": "4", "MASTER_PORT": "29518"}
    writers = [("fresh", True, {**job, "RANK": str(rank)}) for rank in range(4)]
    results = _writers(tmp_path / "fresh", tmp_path, writers)
    _check(tmp_path / "fresh", "fresh", results, "4 ranks creating one Aim repo")
