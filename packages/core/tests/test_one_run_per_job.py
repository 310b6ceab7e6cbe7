"""One run per job (the default): every rank sees the job's run id and an existing run folder, rank 0's.

Only rank 0 runs trackers; the other ranks learn the id rank 0 opened (``torch.distributed``'s store
when the script initialised the process group, else a file in the shared ``logging_dir``) and never
write in the run. Where nothing reaches them, they say so once and use an id of the job's, with an
(empty) folder of their own machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tracking_core.testing.ranks import launch_ranks

RANK_SCRIPT = r"""
import json, os, sys
from pathlib import Path
import tracking_core

import time
if os.environ["RANK"] != "0" and sys.argv[2] == "late":
    time.sleep(3.0)  # rank 0 has opened and finished both runs before this rank asks for the first
seen = []
for index in range(2):  # a job that opens two runs one after the other (a sweep)
    run = tracking_core.init("p", log_with=["jsonl"], logging_dir=sys.argv[1], config={"run": index})
    run.log({"loss": float(index)}, step=0)
    seen.append({"run_id": run.run_id, "run_dir": str(run.run_dir), "exists": Path(run.run_dir).is_dir(),
                 "trackers": len(run.trackers)})
    run.finish()
print(json.dumps(seen))
"""


@pytest.mark.parametrize("timing", ["together", "late"])
def test_every_rank_sees_the_jobs_run_id_and_its_folder(tmp_path, timing):
    port = 29541 if timing == "together" else 29543
    ranks = launch_ranks(RANK_SCRIPT, str(tmp_path / "runs"), timing, world=3, port=port, cwd=tmp_path)
    zero = ranks[0]
    for rank, runs in enumerate(ranks):
        for index, seen in enumerate(runs):
            assert seen["run_id"] == zero[index]["run_id"], (rank, index, ranks)
            assert seen["run_dir"] == zero[index]["run_dir"] and seen["exists"], (rank, index, seen)
            assert seen["trackers"] == (1 if rank == 0 else 0)
    assert zero[0]["run_id"] != zero[1]["run_id"]
    folders = sorted(path.name for path in (tmp_path / "runs" / "p").iterdir() if not path.name.startswith("."))
    assert folders == sorted(seen["run_id"] for seen in zero), "the other ranks opened no run of their own"
    for seen in zero:
        assert (Path(seen["run_dir"]) / "run.json").is_file()


def test_a_rank_that_hears_nothing_says_so_and_still_has_a_folder(tmp_path, monkeypatch):
    """No process group, no shared folder (rank 0 writes elsewhere): after the wait, an id of the job's."""
    from tracking_core.run import rendezvous

    monkeypatch.setattr(rendezvous, "WAIT_SECONDS", 0.3)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_PORT", "29542")
    import tracking_core

    with pytest.warns(Warning, match="did not hear rank 0's run id"):
        run = tracking_core.init("p", log_with=["jsonl"], logging_dir=tmp_path / "runs")
    assert run.run_id.startswith("job-") and run.run_dir == tmp_path / "runs" / "p" / run.run_id
    assert run.run_dir.is_dir() and not any(run.run_dir.iterdir()), "an empty folder: this rank writes nothing"
    run.finish()


TORCH_SCRIPT = r"""
import json, os, sys
from pathlib import Path
import torch.distributed as dist
import tracking_core

dist.init_process_group("gloo")
rank = dist.get_rank()
# each rank its own logging_dir: no shared file system, the id travels through torch.distributed's store
run = tracking_core.init("p", log_with=["jsonl"], logging_dir=f"{sys.argv[1]}/node-{rank}")
seen = {"run_id": run.run_id, "exists": Path(run.run_dir).is_dir(), "name": Path(run.run_dir).name}
run.finish()
dist.barrier()
dist.destroy_process_group()
print(json.dumps(seen))
"""


def test_the_run_id_travels_through_torch_distributed_without_a_shared_folder(tmp_path):
    pytest.importorskip("torch.distributed")
    ranks = launch_ranks(
        TORCH_SCRIPT, str(tmp_path), world=2, port=29543, cwd=tmp_path, env={"MASTER_ADDR": "127.0.0.1"}
    )
    assert ranks[0]["run_id"] == ranks[1]["run_id"] == ranks[0]["name"] == ranks[1]["name"], ranks
    assert ranks[0]["exists"] and ranks[1]["exists"]
    assert not (tmp_path / "node-1" / "p" / ranks[1]["run_id"] / "run.json").exists(), "rank 1 wrote nothing"
