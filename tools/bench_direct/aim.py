"""Aim called directly in its embedded mode (a local repo), for tools/bench.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def open_run(logging_dir: Path) -> tuple[Callable[[dict, int], None], Callable[[], None]]:
    """Start an Aim run in the repo ``<logging_dir>/.aim``; return (log(values, step), finish()).

    Set up as a careful user of the SDK would: no system-stats sampler thread, no terminal capture,
    no environment capture. ``log`` is Aim's per-step call, ``run.track({key: value, ...}, step=step)``;
    ``finish`` is ``run.close()``, which flushes RocksDB and releases the run's locks.
    """
    from aim import Run

    run = Run(
        repo=str(Path(logging_dir).absolute()),
        experiment="bench",
        system_tracking_interval=None,
        capture_terminal_logs=False,
        log_system_params=False,
    )

    def log(values: dict, step: int) -> None:
        run.track(values, step=step)

    return log, run.close
