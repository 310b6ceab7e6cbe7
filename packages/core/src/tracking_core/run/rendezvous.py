"""Per-rank runs: how every rank of a job learns the run id that rank 0 chose.

In order: ``torch.distributed`` when the application already initialised it (a broadcast from
rank 0, the authority once the process group exists); ``TRACKING_RUN_ID`` when the user or the
launcher script sets it; otherwise a small file that rank 0 writes in the project folder, keyed
by the launcher's job id so that concurrent jobs never read each other's (the ranks must share
that folder, as they share ``logging_dir``). A rank that hears nothing within the timeout uses an
id derived from the job id and says so once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..notices import warn_once

RUN_ID_VARIABLE = "TRACKING_RUN_ID"
#: what identifies one launch of a job, per launcher (torchrun, SLURM, Open MPI / PMIx, MPICH)
JOB_VARIABLES = (
    "TORCHELASTIC_RUN_ID",
    "SLURM_JOB_ID",
    "PMIX_NAMESPACE",
    "OMPI_MCA_ess_base_jobid",
    "PMI_ID",
    "MASTER_PORT",
)
WAIT_SECONDS = 120.0
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def job_key() -> str:
    """The launcher's id for this job (``local`` when nothing identifies it)."""
    parts = []
    for variable in JOB_VARIABLES:
        value = os.environ.get(variable)
        if value and value != "none":
            parts.append(f"{variable}={value}")
    if os.environ.get("SLURM_STEP_ID"):
        parts.append(f"step={os.environ['SLURM_STEP_ID']}")
    return ";".join(parts) or "local"


_IMPORTED = time.time()


def process_started() -> float:
    """When this process started (Unix seconds); the import of this module where /proc cannot tell."""
    try:
        with open("/proc/self/stat") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as system:
            boot = next(int(line.split()[1]) for line in system if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTED


def _torch_broadcast(rank: int, choose: Callable[[], str]) -> str | None:
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not (dist.is_available() and dist.is_initialized()):
            return None
    except Exception:
        return None
    box = [choose() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return str(box[0])


def _file_for(project_dir: Path) -> Path:
    digest = hashlib.sha1(job_key().encode()).hexdigest()[:12]
    return project_dir / ".per-rank" / f"{digest}.json"


def _by_file(project_dir: Path, rank: int, choose: Callable[[], str], since: float, timeout: float) -> str | None:
    path = _file_for(project_dir)
    if rank == 0:
        run_id = choose()
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"run_id": run_id, "written": time.time(), "job": job_key()}))
        os.replace(temporary, path)  # readers see the whole file or none
        return run_id
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = json.loads(path.read_text())
            if found.get("written", 0) >= since:  # an earlier launch's file is older than this process
                return str(found["run_id"])
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    return None


def shared_run_id(
    project_dir: Path, rank: int, choose: Callable[[], str], *, timeout: float = WAIT_SECONDS
) -> tuple[str, str]:
    """The job's run id (``choose()`` runs on rank 0 only) and the channel it travelled by."""
    since = process_started() - 5.0  # a file written before this process existed is an earlier launch's
    run_id = _torch_broadcast(rank, choose)
    if run_id is not None:
        return run_id, "torch.distributed"
    if os.environ.get(RUN_ID_VARIABLE):
        return _SAFE.sub("-", os.environ[RUN_ID_VARIABLE]), RUN_ID_VARIABLE
    run_id = _by_file(project_dir, rank, choose, since, timeout)
    if run_id is not None:
        return run_id, "file"
    fallback = "job-" + hashlib.sha1(job_key().encode()).hexdigest()[:12]
    warn_once(
        "dispatcher",
        "per_rank",
        f"rank {rank} did not hear rank 0's run id within {timeout:.0f} s (no torch.distributed, no "
        f"{RUN_ID_VARIABLE}, no shared {project_dir}); using {fallback}, derived from the launcher's job id",
        reason="per-rank-id",
    )
    return fallback, "job id"
