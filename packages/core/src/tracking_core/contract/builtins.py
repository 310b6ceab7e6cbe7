"""The project's own backends, one row each: the table everything that names a built-in reads.

The registry (``BUILT_IN_CLASSES``, ``LoggerType``), ``tracking list`` (``EMBEDDED_DEFAULTS``,
``SDK_MODULES``), the cell-isolation test and the benchmarks read this table
instead of keeping their own lists; what cannot read Python (the Hatch matrix and mypy paths in the
root ``pyproject.toml``, the docs nav, the README table) is written by ``tools/new_backend.py`` and
checked against the table by ``packages/core/tests/test_builtins_table.py``. Adding a built-in
backend is a row here plus its package folder (``python tools/new_backend.py NAME --sdk MODULE``
makes both).

Third-party backends need none of this: their package's ``tracking.backends`` entry point is enough.
"""

from __future__ import annotations

from typing import NamedTuple


class BuiltIn(NamedTuple):
    """One built-in backend."""

    #: the ``log_with`` name, also the package folder (``packages/<name>``) and the matrix cell
    name: str
    #: the ``tracking.backends`` entry point: ``module:Class``
    entry_point: str
    #: the SDK module the backend imports (``None``: no third-party SDK)
    sdk: str | None
    #: where it writes with no account and no server (``tracking list``)
    embedded: str
    #: the name people know it by (docs nav, README)
    title: str
    #: the SDK's distribution on PyPI, with its lower bound as the package requires it
    sdk_requirement: str = ""
    #: the class ``accelerate.tracking`` has for it (the benchmarks' reference), if any
    accelerate_class: str | None = None

    @property
    def package(self) -> str:
        """The distribution that provides it (``comet_ml`` -> ``tracking-comet-ml``)."""
        return "tracking-core" if self.sdk is None else f"tracking-{self.name.replace('_', '-')}"

    @property
    def module(self) -> str:
        """The module its tracker class lives in."""
        return self.entry_point.partition(":")[0]


BUILT_INS: tuple[BuiltIn, ...] = (
    BuiltIn(
        "jsonl",
        "tracking_core.backends.jsonl:JsonlTracker",
        None,
        "journal.jsonl under <logging_dir>/<project>/<run>",
        "jsonl (the journal)",
    ),
    BuiltIn(
        "tensorboard",
        "tracking_tensorboard:TensorBoardTracker",
        "tensorboard",
        "event files in <logging_dir>/<project>/<run>",
        "TensorBoard",
        "tensorboard>=2.17.1",
        "TensorBoardTracker",
    ),
    BuiltIn(
        "mlflow",
        "tracking_mlflow:MLflowTracker",
        "mlflow",
        "sqlite:///<logging_dir>/mlflow.db",
        "MLflow",
        "mlflow-skinny>=2.16",
        "MLflowTracker",
    ),
    BuiltIn("aim", "tracking_aim:AimTracker", "aim", "Aim repo at <logging_dir>", "Aim", "aim>=3.18,<4", "AimTracker"),
    BuiltIn(
        "trackio",
        "tracking_trackio:TrackioTracker",
        "trackio",
        "Trackio store in <logging_dir>/trackio",
        "Trackio",
        "trackio>=0.0.3",
        "TrackioTracker",
    ),
    BuiltIn(
        "wandb",
        "tracking_wandb:WandBTracker",
        "wandb",
        "offline run in <logging_dir>/wandb (wandb sync)",
        "Weights & Biases",
        "wandb>=0.19.10",
        "WandBTracker",
    ),
    BuiltIn(
        "comet_ml",
        "tracking_comet_ml:CometMLTracker",
        "comet_ml",
        "offline archive in <logging_dir>/<project>/<run>/comet_ml",
        "Comet",
        "comet-ml>=3.49.8",
        "CometMLTracker",
    ),
    BuiltIn(
        "clearml",
        "tracking_clearml:ClearMLTracker",
        "clearml",
        "offline session in <logging_dir>/clearml/offline",
        "ClearML",
        "clearml>=1.18.0",
        "ClearMLTracker",
    ),
    BuiltIn(
        "swanlab",
        "tracking_swanlab:SwanLabTracker",
        "swanlab",
        "offline run in <logging_dir>/swanlog (swanlab sync)",
        "SwanLab",
        "swanlab>=0.8.0",
        "SwanLabTracker",
    ),
    BuiltIn(
        "dvclive",
        "tracking_dvclive:DVCLiveTracker",
        "dvclive",
        "DVCLive folder in <logging_dir>/<project>/<run>/dvclive (dvc plots show)",
        "DVCLive",
        "dvclive>=3.48.1,<4",
        "DVCLiveTracker",
    ),
)

#: the built-ins by name
BY_NAME: dict[str, BuiltIn] = {row.name: row for row in BUILT_INS}

#: the built-ins that are packages of their own (``packages/<name>``, one matrix cell each), in table order
BACKEND_PACKAGES: tuple[str, ...] = tuple(row.name for row in BUILT_INS if row.sdk is not None)
