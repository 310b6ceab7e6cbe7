"""How every rank of a job learns the run id that rank 0 chose: per-rank runs, and one run per job.

In order: ``torch.distributed`` when the application already initialised it (a broadcast from
rank 0, the authority once the process group exists); ``TRACKING_RUN_ID`` when the user or the
launcher script sets it; otherwise a small file that rank 0 writes in the project folder, keyed
by the launcher's job id so that concurrent jobs never read each other's (the ranks must share
that folder, as they share ``logging_dir``). A rank that hears nothing within the timeout uses an
id derived from the job id and says so once.

One run per job (the default) has rank 0 alone open the run, so no rank may wait on another in a
collective call (rank 0 may be the only one that calls ``init``): rank 0 publishes the id it opened
(:func:`publish_run_id`: a key in ``torch.distributed``'s store, and the file) and never waits; the
other ranks read it (:func:`job_run_id`).
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
from typing import Any

from ..notices import logger, warn_once

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


def _write_file(project_dir: Path, run_id: str, since: float) -> None:
    """Append ``run_id`` to the job's list of run ids (a sweep opens several, and a slow rank must get each
    in turn, not only the newest); a list an earlier launch left (written before ``since``) is replaced."""
    path = _file_for(project_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    try:
        found = json.loads(path.read_text())
        if found.get("job") == job_key():
            runs = [entry for entry in found.get("runs", []) if entry.get("written", 0) >= since]
    except (OSError, ValueError, AttributeError):
        pass
    runs.append({"run_id": run_id, "written": time.time()})
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"job": job_key(), "runs": runs}))
    os.replace(temporary, path)  # readers see the whole file or none


def _read_file(project_dir: Path, since: float, deadline: float, heard: list[str]) -> str | None:
    """Wait until the job's list holds a run id after the ``len(heard)`` this process has (written after
    ``since``: an earlier launch's list is older than this process) and return it."""
    path = _file_for(project_dir)
    while time.monotonic() < deadline:
        try:
            runs = [entry for entry in json.loads(path.read_text())["runs"] if entry.get("written", 0) >= since]
            if len(runs) > len(heard):
                return str(runs[len(heard)]["run_id"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        time.sleep(0.05)
    return None


def _by_file(project_dir: Path, rank: int, choose: Callable[[], str], since: float, timeout: float) -> str | None:
    if rank == 0:
        run_id = choose()
        _write_file(project_dir, run_id, since)
        return run_id
    heard = _HEARD.setdefault(str(project_dir), [])
    found = _read_file(project_dir, since, time.monotonic() + timeout, heard)
    if found is not None:
        heard.append(found)
    return found


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


# -- one run per job ---------------------------------------------------------------------------------

#: the run ids this process heard from rank 0, per project folder, in order: a job that opens one run
#: after another (a sweep) takes the next one rank 0 published, however far ahead rank 0 is
_HEARD: dict[str, list[str]] = {}
#: how many run ids rank 0 published per project (the torch store's key of each)
_PUBLISHED: dict[str, int] = {}


def _torch_store() -> Any:
    """``torch.distributed``'s key-value store, when the script initialised the process group; else None.

    Reading a key there waits for rank 0's write alone: no collective call, which every rank would have
    to make."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not (dist.is_available() and dist.is_initialized()):
            return None
        from torch.distributed import distributed_c10d

        return distributed_c10d._get_default_store()
    except Exception:
        return None


def _store_key(project: str, index: int) -> str:
    return f"tracking/run-id/{project}/{index}"


def publish_run_id(project_dir: Path, project: str, run_id: str) -> None:
    """Rank 0 of a one-run-per-job run says which run it opened; it never waits for the other ranks."""
    store = _torch_store()
    index = _PUBLISHED.get(project, 0)
    _PUBLISHED[project] = index + 1
    if store is not None:
        try:
            store.set(_store_key(project, index), run_id)
        except Exception as error:
            logger.debug("run id not published in torch.distributed's store: %r", error)
    try:
        _write_file(project_dir, run_id, process_started() - 5.0)
    except OSError as error:
        logger.debug("run id not published in %s: %r", project_dir, error)


def _from_store(store: Any, project: str, deadline: float, heard: list[str]) -> str | None:
    """The run id rank 0 published after the ``len(heard)`` this process has: its key waits for it."""
    import datetime

    key = _store_key(project, len(heard))
    try:
        store.wait([key], datetime.timedelta(seconds=max(0.0, deadline - time.monotonic())))
        return bytes(store.get(key)).decode()
    except Exception as error:  # the wait timed out, or the store went away
        logger.debug("no run id in torch.distributed's store: %r", error)
    return None


def job_run_id(project_dir: Path, project: str, rank: int, *, timeout: float | None = None) -> tuple[str, str]:
    """A rank other than 0 in a one-run-per-job run: the run id rank 0 opened, and how it was heard."""
    timeout = WAIT_SECONDS if timeout is None else timeout
    since = process_started() - 5.0
    deadline = time.monotonic() + timeout
    heard = _HEARD.setdefault(str(project_dir), [])
    store = _torch_store()
    run_id = _from_store(store, project, deadline, heard) if store is not None else None
    channel = "torch.distributed"
    if run_id is None:
        run_id, channel = _read_file(project_dir, since, deadline, heard), "file"
    if run_id is None:
        run_id, channel = "job-" + hashlib.sha1(job_key().encode()).hexdigest()[:12], "job id"
        warn_once(
            "dispatcher",
            "job_run_id",
            f"rank {rank} did not hear rank 0's run id within {timeout:.0f} s (no torch.distributed process "
            f"group, no shared {project_dir}); run.run_id is {run_id}, derived from the launcher's job id, "
            "and run.run_dir a folder of this machine",
            reason="per-rank-id",
        )
    heard.append(run_id)
    return run_id, channel
