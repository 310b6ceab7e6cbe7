"""SwanLab called directly in its embedded (offline) mode, for tools/bench.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def open_run(logging_dir: Path) -> tuple[Callable[[dict, int], None], Callable[[], None]]:
    """Start an offline SwanLab run under ``logging_dir``; return (log(values, step), finish()).

    Quiet settings as a library user would choose them (no hardware monitor, no terminal proxy, no
    prompt); ``run.finish()`` returns once the run file is flushed and closed.
    """
    import swanlab

    run = swanlab.init(
        project="bench",
        mode="offline",
        log_dir=str(Path(logging_dir) / "swanlog"),
        settings={"interactive": False, "probe": {"monitor": False}, "terminal": {"proxy_type": "none"}},
    )

    def log(values: dict, step: int) -> None:
        run.log(values, step=step)

    return log, run.finish
