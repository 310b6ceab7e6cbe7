"""ClearML called directly in its embedded mode (an offline session), for tools/bench.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def open_run(logging_dir: Path) -> tuple[Callable[[dict, int], None], Callable[[], None]]:
    """Start an offline ClearML task under logging_dir; return (log(values, step), finish()).

    Set up as a careful user of the SDK would: offline, cache under logging_dir, no framework patching,
    no repository detection, no stdout capture, no resource monitor, and the reporter in a thread
    (``sdk.development.report_use_subprocess: false``; the default forked reporter stalls a call ~5 s).
    """
    logging_dir = Path(logging_dir)
    logging_dir.mkdir(parents=True, exist_ok=True)
    config_file = logging_dir / "clearml.conf"
    config_file.write_text("sdk { development { report_use_subprocess: false } }\n")
    os.environ.setdefault("CLEARML_CONFIG_FILE", str(config_file))  # read when clearml loads its config
    os.environ.setdefault("CLEARML_CACHE_DIR", str(logging_dir.absolute() / "clearml"))
    from clearml import Task

    Task.set_offline(offline_mode=True)
    frameworks = dict.fromkeys(
        "catboost detect_repository fastai gradio hydra joblib lightgbm matplotlib megengine pytorch scikit "
        "tensorboard tensorflow tfdefines xgboost".split(),
        False,
    )
    task = Task.init(
        project_name="bench",
        task_name="direct",
        reuse_last_task_id=False,
        auto_connect_frameworks=frameworks,
        auto_resource_monitoring=False,
        auto_connect_streams=False,
        auto_connect_arg_parser=False,
    )
    logger = task.get_logger()

    def log(values: dict, step: int) -> None:
        for key, value in values.items():
            title, _, series = key.rpartition("/")
            logger.report_scalar(title or key, series, value, iteration=step)

    def finish() -> None:
        task.close()  # flushes the reporter and writes the session zip

    return log, finish
