"""TensorBoard called directly in its embedded mode, for tools/bench.py.

Uses ``tensorboard.summary.Writer``, the numpy-only writer the ``tensorboard`` distribution ships
(torch's and tensorboardX's writers would need those packages).
"""

from collections.abc import Callable
from pathlib import Path


def open_run(logging_dir: Path) -> tuple[Callable[[dict, int], None], Callable[[], None]]:
    from tensorboard.summary import Writer

    writer = Writer(str(Path(logging_dir) / "bench-direct" / "run"))

    def log(values: dict, step: int) -> None:
        for key, value in values.items():
            writer.add_scalar(key, value, step)

    def finish() -> None:
        writer.close()  # flushes and closes the event file

    return log, finish
