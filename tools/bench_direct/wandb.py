"""W&B called directly in its embedded (offline) mode, for tools/bench.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def open_run(logging_dir: Path) -> tuple[Callable[[dict, int], None], Callable[[], None]]:
    """An offline ``wandb`` run under ``logging_dir``, set up as a careful user would (no console
    capture, no system-metrics sidecar, no git probing, nothing written to ``~``)."""
    root = Path(logging_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    for variable, folder in (("WANDB_CACHE_DIR", "cache"), ("WANDB_DATA_DIR", "data")):
        os.environ.setdefault(variable, str(root / "wandb" / folder))
    import wandb

    settings = wandb.Settings(
        mode="offline", console="off", x_disable_stats=True, disable_git=True, save_code=False, silent=True
    )
    run = wandb.init(project="bench", dir=str(root), settings=settings, reinit="create_new")

    def log(values: dict, step: int) -> None:
        run.log(values, step=step)

    def finish() -> None:
        # run.finish() can return before wandb-core wrote the .wandb file; the tracker waits for it.
        from tracking_wandb.flush_wait import wait_until_written

        run.finish()
        wait_until_written(run.settings.sync_file, timeout=60)

    return log, finish
