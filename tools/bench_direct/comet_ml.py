"""comet_ml called directly in its embedded mode (an OfflineExperiment), for tools/bench.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def open_run(logging_dir: Path) -> tuple[Callable[[dict, int], None], Callable[[], None]]:
    """Start an ``OfflineExperiment`` writing its zip under ``<logging_dir>/comet_ml``; return (log, finish).

    Set up as a careful user of the SDK would: no framework patching or Sentry reporter (environment
    variables read at import), no stdout capture, no code/git/environment probing, no summary. ``log``
    is Comet's per-step call, ``experiment.log_metrics(values, step=step)``; ``finish`` is
    ``experiment.end()``, which returns once the offline archive is written.
    """
    os.environ.setdefault("COMET_DISABLE_AUTO_LOGGING", "1")
    os.environ.setdefault("COMET_ERROR_TRACKING_ENABLE", "false")
    import comet_ml

    directory = Path(logging_dir).absolute() / "comet_ml"
    directory.mkdir(parents=True, exist_ok=True)
    experiment = comet_ml.OfflineExperiment(
        project_name="bench",
        offline_directory=str(directory),
        auto_output_logging=False,
        auto_param_logging=False,
        auto_metric_logging=False,
        auto_log_co2=False,
        log_code=False,
        log_graph=False,
        parse_args=False,
        log_git_metadata=False,
        log_git_patch=False,
        log_env_details=False,
        log_env_gpu=False,
        log_env_host=False,
        log_env_cpu=False,
        log_env_network=False,
        log_env_disk=False,
        display_summary_level=0,
    )

    def log(values: dict, step: int) -> None:
        experiment.log_metrics(values, step=step)

    return log, experiment.end
