"""What every SDK writer shares: the run it returns, the canonical content, the clock, the fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..transfer import CANONICAL_POINTS, canonical_time

#: Steps of the runs written on the SDK's own clock (the others hold the canonical content).
STEPS = 20
#: The config of the Aim, Comet and Trackio runs: nesting, a list and a None, as training scripts pass them.
NESTED_CONFIG: dict[str, Any] = {"lr": 0.1, "optimizer": {"name": "adam", "betas": [0.9, 0.999]}, "scheduler": None}


@dataclass
class SdkRun:
    """One run an SDK wrote, and what ``tracking import`` must find in it."""

    backend: str
    #: what ``tracking import <backend>`` is given to import this run (a folder, a file, a store)
    source: Path
    #: the numeric series, ``{key: {step: value}}``, keys as the import names them
    points: dict[str, dict[int, float]]
    #: the config, as the import gives it back
    config: dict[str, Any]
    #: how many images the run holds
    images: int = 0
    #: the source keeps values as float32 (TensorBoard's legacy scalars)
    float32: bool = False
    #: each point's time where the writer chose it (``{key: {step: unix seconds}}``); ``None``: the SDK's clock
    times: dict[str, dict[int, float]] | None = None
    #: wall clock before and after the write: points timed by the SDK's clock fall in between
    written: tuple[float, float] = (0.0, 0.0)
    #: what a writer knows besides (MLflow's run ids, Aim's run hash, the rows Trackio's reader gave)
    info: dict[str, Any] = field(default_factory=dict)


def canonical_times() -> dict[str, dict[int, float]]:
    return {key: {step: canonical_time(step) for step in points} for key, points in CANONICAL_POINTS.items()}


def canonical_points() -> dict[str, dict[int, float]]:
    return {key: dict(points) for key, points in CANONICAL_POINTS.items()}


@contextmanager
def clocked() -> Iterator[list[float]]:
    window = [time.time()]
    yield window
    window.append(time.time())


@contextmanager
def working_directory(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run_script(
    script: str,
    cwd: Path,
    *,
    args: tuple[str, ...] = (),
    strip: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh interpreter, without the environment variables starting with ``strip``."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(strip)}
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise AssertionError(f"the SDK's script failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}")
    return done


def last_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- TensorBoard ----------------------------------------------------------------------------------
