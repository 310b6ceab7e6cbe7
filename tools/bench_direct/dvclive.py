"""DVCLive called directly, as its documentation's training loop does, for tools/bench.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def open_run(logging_dir: Path) -> tuple[Callable[[dict, int], None], Callable[[], None]]:
    """A ``dvclive.Live`` folder under ``logging_dir`` with no DVC experiment and no dvc.yaml; return
    (log(values, step), finish()). Each step is ``log_metric`` per value, then ``next_step()``."""
    from dvclive import Live

    live = Live(dir=str(Path(logging_dir) / "dvclive"), save_dvc_exp=False, dvcyaml=None)

    def log(values: dict, step: int) -> None:
        live.step = step
        for key, value in values.items():
            live.log_metric(key, value)
        live.next_step()

    return log, live.end
