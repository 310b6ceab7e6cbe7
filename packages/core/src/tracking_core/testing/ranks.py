"""Helpers for a backend's tests of the Accelerate contract and of per-rank runs.

``positional_signature`` prints a method's positional parameters the way a test compares them with
Accelerate's; ``per_rank_context`` is the run context the dispatcher gives one rank of a per-rank job, for a
tracker started by hand; ``launch_ranks`` starts the ranks of a job as a launcher would (one process each, with
``RANK``, ``WORLD_SIZE`` and a job-identifying ``MASTER_PORT``) and returns what each printed last.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..contract.tracker import RunContext

#: an argument of :func:`launch_ranks` replaced by each process's rank
RANK = "{rank}"


def per_rank_context(logging_dir: Path, project: str, group: str, rank: int, world_size: int = 2) -> RunContext:
    """What ``init(..., per_rank=True)`` sets on a tracker of rank ``rank``: run ``<group>-rank<N>`` in the folder
    ``<logging_dir>/<project>/<group>/rank-<N>``, grouped by the job's id."""
    run_dir = Path(logging_dir) / project / group / f"rank-{rank}"
    return RunContext(
        project, f"{group}-rank{rank}", run_dir, Path(logging_dir), rank=rank, world_size=world_size, group=group
    )


def positional_signature(function: Callable[..., Any]) -> str:
    """The positional parameters (``name`` or ``name=default``), ``*args`` and ``**kwargs`` of ``function``."""
    parts = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD:
            default = "" if parameter.default is parameter.empty else f"={parameter.default!r}"
            parts.append(parameter.name + default)
        elif parameter.kind is parameter.VAR_POSITIONAL:
            parts.append(f"*{parameter.name}")
        elif parameter.kind is parameter.VAR_KEYWORD:
            parts.append(f"**{parameter.name}")
    return ", ".join(parts)


def launch_ranks(
    script: str,
    *args: str,
    world: int = 2,
    port: int,
    cwd: str | Path,
    drop_env: Iterable[str] = (),
    env: dict[str, str] | None = None,
    timeout: float = 360,
) -> list[dict[str, Any]]:
    """Run ``python -c script *args`` once per rank, all at once; each must print a JSON line last.

    An argument equal to :data:`RANK` becomes the process's rank.
    ``drop_env``: prefixes of environment variables the ranks must not inherit (an SDK's settings);
    ``TRACKING_RUN_ID`` is never inherited, so the run id travels as it would under a launcher.
    """
    dropped = (*tuple(drop_env), "TRACKING_RUN_ID")
    processes = []
    for rank in range(world):
        rank_env = {key: value for key, value in os.environ.items() if not key.startswith(dropped)}
        rank_env.update(env or {})
        rank_env.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_PORT=str(port))
        processes.append(
            subprocess.Popen(
                [sys.executable, "-c", script, *(str(rank) if arg == RANK else arg for arg in args)],
                env=rank_env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    for process in processes:
        out, err = process.communicate(timeout=timeout)
        if process.returncode != 0:
            raise AssertionError(f"rank exited with {process.returncode}: {err[-3000:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results
