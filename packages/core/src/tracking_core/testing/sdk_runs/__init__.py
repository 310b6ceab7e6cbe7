"""Runs written with each tracker's own SDK, not through this library: the sources of the import tests.

A backend's import test (``packages/<backend>/tests/test_import*.py``) and the migration test
(``tests/test_migrations.py``) take their source run from here, so the run one test imports is the
run the other migrates into two more backends. Each writer leaves the run in the SDK's offline or
local store under a folder it is given and returns an :class:`SdkRun`: what to hand to
``tracking import`` and what the run holds.

W&B, Comet, ClearML, SwanLab and Trackio keep process-wide state (a service process, environment
variables read at import, a task singleton), so their run is written by a fresh interpreter with an
empty ``HOME`` and none of the developer's settings for that SDK; TensorBoard, MLflow, Aim and DVCLive
write in the calling process. Every SDK is imported inside its writer: core imports no third-party
package. No pytest is needed here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .common import NESTED_CONFIG, STEPS, SdkRun
from .fresh_interpreter import SWANLAB_CONFIG, write_clearml, write_comet_ml, write_swanlab, write_trackio, write_wandb
from .in_process import write_aim, write_dvclive, write_mlflow, write_tensorboard

__all__ = [
    "NESTED_CONFIG",
    "STEPS",
    "SWANLAB_CONFIG",
    "WRITERS",
    "SdkRun",
    "write",
    "write_aim",
    "write_clearml",
    "write_comet_ml",
    "write_dvclive",
    "write_mlflow",
    "write_swanlab",
    "write_tensorboard",
    "write_trackio",
    "write_wandb",
]


def _mlflow_in(root: Path) -> SdkRun:
    return write_mlflow(f"sqlite:///{root / 'mlflow.db'}", root, runs=1)


#: ``backend -> writer(folder)``: each backend's run, written into an empty folder of its own.
WRITERS: dict[str, Callable[[Path], SdkRun]] = {
    "tensorboard": lambda root: write_tensorboard(root / "tb" / "exp1"),
    "mlflow": _mlflow_in,
    "aim": write_aim,
    "trackio": write_trackio,
    "wandb": write_wandb,
    "comet_ml": write_comet_ml,
    "clearml": write_clearml,
    "swanlab": write_swanlab,
    "dvclive": lambda root: write_dvclive(root / "exp" / "dvclive"),
}


def write(backend: str, root: Path) -> SdkRun:
    """``backend``'s run, written with its SDK into the empty folder ``root``."""
    return WRITERS[backend](Path(root))
