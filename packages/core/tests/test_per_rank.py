"""``per_rank=True``: every rank logs its own run, grouped under the run id rank 0 chose."""

from __future__ import annotations

from tracking_core.store.journal import JournalSummary
from tracking_core.testing.ranks import launch_ranks

RANK_SCRIPT = r"""
import json, os, sys
from tracking_core import init

rank = int(os.environ["RANK"])
run = init("job", log_with=["jsonl"], logging_dir=sys.argv[1], per_rank=True, resume=sys.argv[2] == "resume")
for step in range(int(sys.argv[3]), int(sys.argv[3]) + 5):
    run.log({"loss": rank * 100 + step})
tracker = run.trackers[0]
context = tracker.run_context
run.finish()
print(json.dumps({"run_id": run.run_id, "run_dir": str(run.run_dir), "context_run_id": context.run_id,
                  "group": context.group, "rank": context.rank, "world_size": context.world_size}))
"""


def _launch(tmp_path, world, *, resume=False, first_step=0, port="29511"):
    args = (str(tmp_path), "resume" if resume else "new", str(first_step))
    return launch_ranks(RANK_SCRIPT, *args, world=world, port=int(port), cwd=tmp_path)


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
