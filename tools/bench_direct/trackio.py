"""Trackio called directly in its embedded mode, for tools/bench.py."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path


def open_run(logging_dir: Path) -> tuple[Callable[[dict, int], None], Callable[[], None]]:
    """Start a Trackio run in its local store under logging_dir; return (log(values, step), finish()).

    A direct user sets TRACKIO_DIR before the first ``import trackio`` (Trackio reads it at import time), so
    this does that in a fresh process. If trackio was already imported (e.g. by another row of the benchmark),
    its location constants are re-pointed the way tracking-trackio does it, so nothing lands in ~.
    """
    store = Path(logging_dir).resolve() / "trackio"
    if "trackio" not in sys.modules:
        os.environ["TRACKIO_DIR"] = str(store)
    import trackio

    if Path(trackio.utils.TRACKIO_DIR) != store:
        from tracking_trackio.startup import point_sdk_at

        point_sdk_at(store)

    run = trackio.init(project="bench", auto_log_cpu=False, auto_log_gpu=False, embed=False)

    def log(values: dict, step: int) -> None:
        run.log(values, step=step)

    def finish() -> None:
        run.finish()  # stops Trackio's writer thread after it has written every queued row

    return log, finish
