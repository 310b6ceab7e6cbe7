"""A few steps of "training" under a real launcher: all_reduce over gloo (CPU), one log call per step.

Started by torchrun, ``accelerate launch`` (tracking-accelerate's ``Accelerator(log_with=...)``), or as
plain processes that carry SLURM or Open MPI rank variables (``--launcher slurm|mpi``: a simulated
``srun``/``mpirun``). Every rank logs
``{"rank": <its rank>, "reduced": <all_reduce sum>}`` after the step's all_reduce, so a point read back
tells which rank wrote it and whether the collective ran. The last line printed is one JSON object:
the rank's view of the run (rank, world size, run id, how many trackers ran, the finish report).

``--crash-rank R --crash-step S``: rank R raises before step S's all_reduce; the other ranks then fail
inside that all_reduce (the peer is gone) and must still exit, with steps 0..S-1 stored.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", choices=["torchrun", "accelerate", "slurm", "mpi"], required=True)
    parser.add_argument("--project", default="launch")
    parser.add_argument("--logging-dir", required=True)
    parser.add_argument("--backends", default="jsonl,tensorboard,mlflow,aim")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--per-rank", action="store_true")
    parser.add_argument("--crash-rank", type=int, default=-1)
    parser.add_argument("--crash-step", type=int, default=-1)
    return parser.parse_args()


def launcher_rank_and_size(launcher: str) -> tuple[int, int]:
    """What ``srun``/``mpirun`` tell a process; torchrun and accelerate hand torch RANK/WORLD_SIZE themselves."""
    if launcher == "slurm":
        return int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    return int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])


def start_process_group(args: argparse.Namespace, options: dict):
    """The process group; under ``accelerate launch`` tracking-accelerate's ``Accelerator``, which creates the
    group itself and runs tracking's dispatcher (``accelerator.tracking``) for its ``log_with``."""
    import torch.distributed as dist

    timeout = timedelta(seconds=60)  # a peer that never answers must not hold a rank forever
    if args.launcher == "accelerate":
        from tracking_accelerate import Accelerator

        accelerator = Accelerator(
            cpu=True, log_with=args.backends.split(","), project_dir=args.logging_dir, tracking_options=options
        )
        assert dist.is_initialized(), accelerator.state
        accelerator.init_trackers(args.project)
        return accelerator
    if args.launcher == "torchrun":
        dist.init_process_group("gloo", timeout=timeout)  # env:// with torchrun's MASTER_ADDR/PORT, RANK
    else:
        rank, world = launcher_rank_and_size(args.launcher)
        address = f"tcp://127.0.0.1:{os.environ['TEST_MASTER_PORT']}"
        dist.init_process_group("gloo", init_method=address, rank=rank, world_size=world, timeout=timeout)
    return None


def main() -> None:
    args = parse()
    import tracking_core

    options = {"per_rank": True} if args.per_rank else {}
    run = None
    if args.launcher in ("slurm", "mpi"):
        # Tracking first, from the launcher's variables alone (no process group yet, torch not imported).
        assert "torch" not in sys.modules
        run = tracking_core.init(
            args.project, log_with=args.backends.split(","), logging_dir=args.logging_dir, **options
        )
    accelerator = start_process_group(args, options)
    import torch
    import torch.distributed as dist

    if accelerator is not None:
        run = accelerator.tracking
    if run is None:  # torchrun: tracking after the process group, which it then asks
        run = tracking_core.init(
            args.project, log_with=args.backends.split(","), logging_dir=args.logging_dir, **options
        )
    rank, world = dist.get_rank(), dist.get_world_size()
    assert (rank, world) == (tracking_core.get_rank(), tracking_core.get_world_size())
    for step in range(args.steps):
        if rank == args.crash_rank and step == args.crash_step:
            raise RuntimeError(f"rank {rank} crashes at step {step}")
        value = torch.tensor([float(rank + 1)])
        dist.all_reduce(value)
        (accelerator or run).log({"rank": float(rank), "reduced": float(value.item())}, step=step)
    started = time.monotonic()
    if accelerator is not None:
        report = accelerator.end_training()  # finishes the run, then ends the process group
    else:
        report = run.finish()
        dist.destroy_process_group()
    finish_seconds = time.monotonic() - started
    summary = {
        "rank": rank,
        "world": world,
        "run_id": run.run_id,
        "trackers": len(run.trackers),
        "ok": report.ok,
        "failed": report.failed,
        "finish_seconds": round(finish_seconds, 2),
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
