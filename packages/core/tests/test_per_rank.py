"""``per_rank=True``: every rank logs its own run, grouped under the run id rank 0 chose."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tracking_core.journal import JournalSummary

RANK_SCRIPT = r"""
import json, sys
from tracking_core import init

rank = int(sys.argv[1])
run = init("job", log_with=["jsonl"], logging_dir=sys.argv[2], per_rank=True, resume=sys.argv[3] == "resume")
for step in range(int(sys.argv[4]), int(sys.argv[4]) + 5):
    run.log({"loss": rank * 100 + step})
tracker = run.trackers[0]
context = tracker.run_context
run.finish()
print(json.dumps({"run_id": run.run_id, "run_dir": str(run.run_dir), "context_run_id": context.run_id,
                  "group": context.group, "rank": context.rank, "world_size": context.world_size}))
"""


def _launch(tmp_path, world, *, resume=False, first_step=0, port="29511"):
    processes = []
    for rank in range(world):
        env = {
            **os.environ,
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "MASTER_PORT": port,  # what tells this job from another one on the machine
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("TRACKING_RUN_ID", None)
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    RANK_SCRIPT,
                    str(rank),
                    str(tmp_path),
                    "resume" if resume else "new",
                    str(first_step),
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    for process in processes:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_each_rank_logs_its_own_run_under_one_job_id(tmp_path):
    results = _launch(tmp_path, 3)
    job = {result["run_id"] for result in results}
    assert len(job) == 1
    (job_id,) = job
    for rank, result in enumerate(results):
        assert result["group"] == job_id and result["rank"] == rank and result["world_size"] == 3
        assert result["context_run_id"] == f"{job_id}-rank{rank}"
        assert result["run_dir"] == str(tmp_path / "job" / job_id / f"rank-{rank}")
        summary = JournalSummary(result["run_dir"])
        assert summary.metrics["loss"] == [(step, rank * 100 + step) for step in range(5)]


def test_resume_continues_every_ranks_run(tmp_path):
    first = _launch(tmp_path, 2)
    second = _launch(tmp_path, 2, resume=True, first_step=5, port="29512")
    assert {r["run_id"] for r in first} == {r["run_id"] for r in second}
    for rank, result in enumerate(second):
        summary = JournalSummary(result["run_dir"])
        assert summary.metrics["loss"] == [(step, rank * 100 + step) for step in range(10)]


def test_two_jobs_at_once_never_share_an_id(tmp_path):
    import threading

    outcomes: dict[str, list] = {}
    threads = [
        threading.Thread(target=lambda port=port: outcomes.__setitem__(port, _launch(tmp_path, 2, port=port)))
        for port in ("29521", "29522")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = [{r["run_id"] for r in results} for results in outcomes.values()]
    assert all(len(found) == 1 for found in ids) and ids[0] != ids[1]
