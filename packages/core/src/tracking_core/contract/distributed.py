"""Which process am I? Global rank from the launcher's environment, without importing torch."""

from __future__ import annotations

import os
import sys

RANK_VARIABLES = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def _rank_from_torch() -> int | None:
    # Only ask torch when the application already imported it: importing torch costs seconds.
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    try:
        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        return None
    return None


def get_rank() -> int:
    """Global rank of this process; 0 when nothing says otherwise.

    An initialised ``torch.distributed`` wins over environment variables because it is the
    authority once the process group exists; launchers set ``RANK`` etc. before that.
    """
    rank = _rank_from_torch()
    if rank is not None:
        return rank
    for variable in RANK_VARIABLES:
        value = os.environ.get(variable)
        if value not in (None, ""):
            try:
                return int(value)
            except ValueError:
                continue
    return 0


def get_world_size() -> int:
    """Number of processes in the job; 1 when nothing says otherwise (same sources as :func:`get_rank`)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_world_size())
    except Exception:
        pass
    for variable in ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        value = os.environ.get(variable)
        if value:
            try:
                return int(value)
            except ValueError:
                continue
    return 1


def is_main_process() -> bool:
    """Whether this process is global rank 0, the one that runs ``main_process_only`` trackers."""
    return get_rank() == 0
