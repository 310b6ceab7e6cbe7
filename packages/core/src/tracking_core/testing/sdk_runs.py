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

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from .transfer import CANONICAL_CONFIG, CANONICAL_POINTS, T0, canonical_time

__all__ = [
    "STEPS",
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

#: Steps of the runs written on the SDK's own clock (the others hold the canonical content).
STEPS = 20
#: The config of the Aim, Comet and Trackio runs: nesting, a list and a None, as training scripts pass them.
NESTED_CONFIG: dict[str, Any] = {"lr": 0.1, "optimizer": {"name": "adam", "betas": [0.9, 0.999]}, "scheduler": None}


@dataclass
class SdkRun:
    """One run an SDK wrote, and what ``tracking import`` must find in it."""

    backend: str
    #: what ``tracking import <backend>`` is given to import this run (a folder, a file, a store)
    source: Path
    #: the numeric series, ``{key: {step: value}}``, keys as the import names them
    points: dict[str, dict[int, float]]
    #: the config, as the import gives it back
    config: dict[str, Any]
    #: how many images the run holds
    images: int = 0
    #: the source keeps values as float32 (TensorBoard's legacy scalars)
    float32: bool = False
    #: each point's time where the writer chose it (``{key: {step: unix seconds}}``); ``None``: the SDK's clock
    times: dict[str, dict[int, float]] | None = None
    #: wall clock before and after the write: points timed by the SDK's clock fall in between
    written: tuple[float, float] = (0.0, 0.0)
    #: what a writer knows besides (MLflow's run ids, Aim's run hash, the rows Trackio's reader gave)
    info: dict[str, Any] = field(default_factory=dict)


def _canonical_times() -> dict[str, dict[int, float]]:
    return {key: {step: canonical_time(step) for step in points} for key, points in CANONICAL_POINTS.items()}


def _canonical_points() -> dict[str, dict[int, float]]:
    return {key: dict(points) for key, points in CANONICAL_POINTS.items()}


@contextmanager
def _clocked() -> Iterator[list[float]]:
    window = [time.time()]
    yield window
    window.append(time.time())


@contextmanager
def _working_directory(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _run_script(
    script: str,
    cwd: Path,
    *,
    args: tuple[str, ...] = (),
    strip: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh interpreter, without the environment variables starting with ``strip``."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(strip)}
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise AssertionError(f"the SDK's script failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}")
    return done


def _last_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- TensorBoard ----------------------------------------------------------------------------------


def write_tensorboard(log_dir: Path) -> SdkRun:
    """The canonical content as torch.utils.tensorboard writes it (legacy values) plus tf.summary-style
    tensors, an image, a text, a histogram and an audio clip (which the import cannot carry)."""
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.plugins.scalar import metadata as scalar_metadata
    from tensorboard.plugins.text import metadata as text_metadata
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    from ..kit.png import encode_png

    began = time.time()
    writer = EventFileWriter(str(log_dir))
    Value = summary_pb2.Summary.Value

    def emit(step: int, *values: Any, wall_time: float | None = None) -> None:
        event = event_pb2.Event(step=step, wall_time=wall_time or canonical_time(step))
        event.summary.value.extend(values)
        writer.add_event(event)

    start = plugin_data_pb2.SessionStartInfo(start_time_secs=canonical_time(0))
    start.hparams["lr"].number_value = CANONICAL_CONFIG["lr"]
    start.hparams["batch_size"].number_value = CANONICAL_CONFIG["batch_size"]
    start.hparams["optimizer"].string_value = CANONICAL_CONFIG["optimizer"]
    content = plugin_data_pb2.HParamsPluginData(session_start_info=start, version=0).SerializeToString()
    hparams_meta = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="hparams", content=content)
    )
    emit(
        0,
        Value(
            tag="_hparams_/session_start_info",
            metadata=hparams_meta,
            tensor=tensor_util.make_tensor_proto([], dtype=np.float32),
        ),
    )
    for step, value in CANONICAL_POINTS["train/loss"].items():  # torch: simple_value (float32)
        emit(step, Value(tag="train/loss", simple_value=value))
    first = True
    for step, value in CANONICAL_POINTS["val/acc"].items():  # tf.summary: a tensor, metadata on the first only
        metadata = scalar_metadata.create_summary_metadata(display_name="", description="") if first else None
        tensor = tensor_util.make_tensor_proto(np.float64(value))
        emit(
            step,
            Value(tag="val/acc", metadata=metadata, tensor=tensor) if metadata else Value(tag="val/acc", tensor=tensor),
        )
        first = False
    png = encode_png(np.full((3, 4, 3), 90, dtype=np.uint8))
    emit(
        3,
        Value(
            tag="samples", image=summary_pb2.Summary.Image(height=3, width=4, colorspace=3, encoded_image_string=png)
        ),
    )
    text_meta = text_metadata.create_summary_metadata(display_name="", description="")
    emit(6, Value(tag="notes", metadata=text_meta, tensor=tensor_util.make_tensor_proto("hello **world**")))
    histo = summary_pb2.HistogramProto(
        min=0.5,
        max=2.5,
        num=4,
        sum=6,
        sum_squares=11,
        bucket_limit=[1.0, 2.0, 1.7976931348623157e308],
        bucket=[1, 2, 1],
    )
    emit(9, Value(tag="weights", histo=histo))
    emit(12, Value(tag="speech", audio=summary_pb2.Summary.Audio(sample_rate=8000, encoded_audio_string=b"RIFF")))
    writer.close()
    return SdkRun(
        "tensorboard",
        log_dir,
        _canonical_points(),
        dict(CANONICAL_CONFIG),
        images=1,
        float32=True,
        times=_canonical_times(),
        written=(began, time.time()),
    )


# -- MLflow ---------------------------------------------------------------------------------------


def write_mlflow(uri: str, scratch: Path, runs: int = 2) -> SdkRun:
    """``runs`` runs of the canonical content in one experiment, written with ``MlflowClient`` directly,
    each with a tag and an artifact; ``info["run_ids"]`` lists them. ``uri`` is a file or SQLite store."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param, RunTag

    began = time.time()
    if uri.startswith("sqlite:///"):  # start from the migrated empty store the cell caches (saves the migrations)
        from tracking_mlflow.schema_cache import seed_store

        seed_store(Path(uri[len("sqlite:///") :]))
    client = MlflowClient(tracking_uri=uri)
    # a SQLite store's default artifact root is ./mlruns in the working directory: beside the store instead
    location = (scratch / "mlartifacts").as_uri() if uri.startswith("sqlite:///") else None
    experiment = client.create_experiment("sdk-exp", artifact_location=location)
    artifact = scratch / "notes.txt"
    artifact.write_text("trained on CPU", encoding="utf-8")
    ids = []
    for index in range(runs):
        run = client.create_run(experiment, start_time=int(T0 * 1000), run_name=f"sdk-run-{index}")
        metrics = [
            Metric(key, value, round(canonical_time(step) * 1000), step)
            for key, points in CANONICAL_POINTS.items()
            for step, value in points.items()
        ]
        params = [Param(key, str(value)) for key, value in CANONICAL_CONFIG.items()]
        client.log_batch(run.info.run_id, metrics=metrics, params=params, tags=[RunTag("team", "vision")])
        client.log_artifact(run.info.run_id, str(artifact), "docs")
        client.set_terminated(run.info.run_id, end_time=int(canonical_time(57) * 1000))
        ids.append(run.info.run_id)
    source = Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else Path(uri.removeprefix("file://"))
    return SdkRun(
        "mlflow",
        source,
        _canonical_points(),
        dict(CANONICAL_CONFIG),  # params "0.001", "32", "adam" come back as 0.001, 32, "adam"
        times=_canonical_times(),
        written=(began, time.time()),
        info={"run_ids": ids},
    )


# -- DVCLive --------------------------------------------------------------------------------------


def write_dvclive(folder: Path) -> SdkRun:
    """The canonical content through ``dvclive.Live`` itself, timestamps on (DVCLive's ``timestamp=True``),
    an image at step 6 and a file under ``artifacts/``. DVCLive takes each time from ``time.time()``,
    which is set to the canonical time of each step while it logs. It runs in ``folder``'s parent:
    DVCLive looks for a DVC repository from the working directory up (and in a Git checkout without
    one, initialises one there)."""
    import numpy as np
    from dvclive import Live

    began = time.time()
    clock = {"now": 0.0}
    folder.mkdir(parents=True, exist_ok=True)
    with (
        _working_directory(folder.parent),
        mock.patch("time.time", lambda: clock["now"]),
        Live(str(folder), save_dvc_exp=False, dvcyaml=None) as live,
    ):
        live.log_params(CANONICAL_CONFIG)
        for step in sorted({s for points in CANONICAL_POINTS.values() for s in points}):
            live.step = step
            clock["now"] = canonical_time(step)
            for key, points in CANONICAL_POINTS.items():
                if step in points:
                    live.log_metric(key, points[step], timestamp=True)
            if step == 6:
                live.log_image("samples/6.png", np.full((3, 4, 3), 120, dtype=np.uint8))
        (folder / "artifacts").mkdir(exist_ok=True)
        (folder / "artifacts" / "model.txt").write_text("weights", encoding="utf-8")
    return SdkRun(
        "dvclive",
        folder,
        _canonical_points(),
        dict(CANONICAL_CONFIG),
        images=1,
        times=_canonical_times(),
        written=(began, time.time()),
    )


# -- Aim ------------------------------------------------------------------------------------------


def write_aim(root: Path) -> SdkRun:
    """A repo with one run the aim SDK wrote: metrics in two contexts, text, images, a distribution.

    ``info["run_hash"]`` is the run's hash.
    """
    import numpy as np
    from aim import Distribution, Image, Run, Text

    with _clocked() as window:
        run = Run(
            repo=str(root),
            experiment="imports",
            capture_terminal_logs=False,
            system_tracking_interval=None,
            log_system_params=False,
        )
        run.name = "sdk-run"
        run["hparams"] = NESTED_CONFIG
        run["dataset"] = "mnist"
        run.add_tag("baseline")
        for step in range(STEPS):
            run.track(1.0 / (step + 1), name="loss", step=step)
            run.track(step / STEPS, name="acc", step=step, context={"subset": "val"}, epoch=step // 10)
        run.track(Text("a note"), name="note", step=3)
        pixels = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
        run.track(Image(pixels, caption="first"), name="sample", step=STEPS)
        run.track([Image(pixels), Image(255 - pixels)], name="pair", step=STEPS)
        run.track(Distribution(hist=[1, 2, 3], bin_range=(0, 3)), name="weights", step=STEPS)
        run_hash = run.hash
        run.close()
    points = {
        "loss": {step: 1.0 / (step + 1) for step in range(STEPS)},
        "acc {'subset': 'val'}": {step: step / STEPS for step in range(STEPS)},
    }
    return SdkRun(
        "aim",
        root,
        points,
        {**NESTED_CONFIG, "dataset": "mnist"},
        images=3,
        written=(window[0], window[1]),
        info={"run_hash": run_hash},
    )


# -- Weights & Biases -----------------------------------------------------------------------------

_WANDB = """
import json, os, sys, time
import numpy as np
import wandb

root = sys.argv[1]
run = wandb.init(
    project="imports", name="sdk-run", dir=root, mode="offline",
    config={"lr": 0.1, "optimizer": {"name": "adam", "betas": [0.9, 0.999]}, "scheduler": None},
    tags=["baseline", "small"], group="sweep-1", notes="written by wandb itself",
    settings=wandb.Settings(x_disable_stats=True, console="off", disable_git=True),
)
for step in range(STEPS):
    run.log({"train/loss": 1.0 / (step + 1), "acc": step / STEPS, "phase": f"p{step % 2}"}, step=step)
run.log({"eval": {"loss": 0.5, "acc": 0.75}}, step=STEPS - 1)
pixels = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
run.log({
    "sample": wandb.Image(pixels),
    "pair": [wandb.Image(pixels), wandb.Image(255 - pixels)],
    "weights": wandb.Histogram(np_histogram=([1, 2, 3], [0.0, 1.0, 2.0, 3.0])),
    "preds": wandb.Table(columns=["id", "label"], data=[[0, "cat"], [1, "dog"]]),
}, step=STEPS)
run.summary["best_acc"] = 0.95
run.save(os.path.join(root, "notes.txt"), base_path=root, policy="now")
folder = os.path.dirname(run.dir)
run.finish()
print(json.dumps({"folder": folder}))
"""


def write_wandb(root: Path) -> SdkRun:
    """An offline run the wandb SDK wrote under ``root`` (its ``WANDB_DIR``): numbers, strings, a nested
    dict, images, a histogram, a table, a summary value and a saved file. ``source`` is the
    ``offline-run-*`` folder."""
    (root / "notes.txt").write_text("kept as a file\n")
    env = {
        "HOME": str(root / "home"),
        "WANDB_SILENT": "true",
        "WANDB_CACHE_DIR": str(root / "cache"),
        "WANDB_DATA_DIR": str(root / "data"),
        "WANDB_CONFIG_DIR": str(root / "config"),
    }
    with _clocked() as window:
        done = _run_script(
            f"STEPS = {STEPS}\n" + textwrap.dedent(_WANDB), root, args=(str(root),), strip=("WANDB_",), env=env
        )
    points = {
        "train/loss": {step: 1.0 / (step + 1) for step in range(STEPS)},
        "acc": {step: step / STEPS for step in range(STEPS)},
        "eval.loss": {STEPS - 1: 0.5},
        "eval.acc": {STEPS - 1: 0.75},
    }
    return SdkRun(
        "wandb", Path(_last_json(done)["folder"]), points, dict(NESTED_CONFIG), images=3, written=(window[0], window[1])
    )


# -- Comet ----------------------------------------------------------------------------------------

_COMET = """
import io, json, sys
import numpy as np
from PIL import Image
import comet_ml

STEPS, CONFIG, folder = {steps}, {config}, sys.argv[1]
quiet = dict(auto_output_logging=False, auto_param_logging=False, auto_metric_logging=False, log_env_details=False,
             log_git_metadata=False, log_git_patch=False, log_env_gpu=False, log_env_host=False, log_env_cpu=False,
             log_code=False, display_summary_level=0)
experiment = comet_ml.OfflineExperiment(project_name="imports", offline_directory=folder, **quiet)
experiment.set_name("sdk-run")
experiment.add_tag("baseline")
experiment.log_parameters(CONFIG)
experiment.log_other("dataset", "mnist")
for step in range(STEPS):
    experiment.log_metrics({{"train/loss": 1.0 / (step + 1), "acc": step / STEPS}}, step=step)
experiment.set_step(STEPS)
experiment.set_epoch(1)
pixels = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
experiment.log_image(Image.fromarray(pixels), name="sample", step=STEPS)
experiment.log_text("a note", step=STEPS)
experiment.log_histogram_3d([1.0, 2.0, 2.0, 3.0], name="weights", step=STEPS)
experiment.log_table("preds.csv", tabular_data=[[0, "cat"], [1, "dog"]], headers=["id", "label"])
experiment.end()
print(json.dumps({{"key": experiment.id}}))
"""


def write_comet_ml(root: Path) -> SdkRun:
    """An offline archive comet_ml wrote under ``root/offline``: metrics, parameters, an "other", the step
    and epoch set as a script sets them, an image, a text, a histogram and a table. ``source`` is the
    archive (``<experiment key>.zip``)."""
    env = {
        "HOME": str(root / "home"),
        "MPLCONFIGDIR": str(root / "mpl"),
        "COMET_DISABLE_ANNOUNCEMENT": "1",
        "COMET_API_KEY": "",
        "COMET_ERROR_TRACKING_ENABLE": "false",
    }
    script = textwrap.dedent(_COMET).format(steps=STEPS, config=repr(NESTED_CONFIG))
    with _clocked() as window:
        done = _run_script(script, root, args=(str(root / "offline"),), strip=("COMET_",), env=env)
    points = {
        "train/loss": {step: 1.0 / (step + 1) for step in range(STEPS)},
        "acc": {step: step / STEPS for step in range(STEPS)},
    }
    archive = root / "offline" / f"{_last_json(done)['key']}.zip"
    return SdkRun("comet_ml", archive, points, dict(NESTED_CONFIG), images=1, written=(window[0], window[1]))


# -- ClearML --------------------------------------------------------------------------------------

_CLEARML = """
import json, sys
import numpy as np
from PIL import Image
from clearml import Task

STEPS = {steps}
Task.set_offline(offline_mode=True)
task = Task.init(project_name="imports", task_name="sdk-run", auto_connect_frameworks={{"detect_repository": False}},
                 auto_resource_monitoring=False, auto_connect_streams=False, auto_connect_arg_parser=False)
task.connect({{"lr": 0.1, "optimizer": {{"name": "adam", "eps": 1e-8}}, "steps": 20, "amp": True}})
task.add_tags(["baseline"])
logger = task.get_logger()
for step in range(STEPS):
    logger.report_scalar("loss", "train", 1.0 / (step + 1), iteration=step)
    logger.report_scalar("acc", "val", step / STEPS, iteration=step)
pixels = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
logger.report_image("sample", "rgb", iteration=STEPS, image=pixels)
Image.fromarray(255 - pixels).save("chart.png")
logger.report_image("chart", "png", iteration=STEPS, local_path="chart.png")
logger.report_single_value("best", 0.9)
folder = str(task.get_offline_mode_folder())
task.close()
print(json.dumps({{"folder": folder}}))
"""


def write_clearml(root: Path) -> SdkRun:
    """An offline session clearml wrote under ``root``: scalars, a connected config, a tag, two debug images
    (an array, which ClearML stores as JPEG, and a PNG file) and a single value. ``source`` is the session
    folder (its zip is beside it)."""
    (root / "clearml.conf").write_text("sdk.development.report_use_subprocess: false\n")
    # TRAINS_/CLEARML_PROC_MASTER_ID, left by a task an earlier test made in this process, would make the
    # child's Task.init a stand-in of that task
    env = {
        "HOME": str(root / "home"),
        "CLEARML_OFFLINE_MODE": "1",
        "CLEARML_CACHE_DIR": str(root / "cache"),
        "CLEARML_CONFIG_FILE": str(root / "clearml.conf"),
    }
    with _clocked() as window:
        done = _run_script(
            textwrap.dedent(_CLEARML).format(steps=STEPS), root, strip=("CLEARML_", "TRAINS_"), env=env, timeout=120
        )
    points = {
        "loss": {step: 1.0 / (step + 1) for step in range(STEPS)},
        "acc/val": {step: step / STEPS for step in range(STEPS)},
    }
    config = {"lr": 0.1, "optimizer": {"name": "adam", "eps": 1e-8}, "steps": 20, "amp": True}
    folder = Path(_last_json(done)["folder"])
    return SdkRun(
        "clearml", folder, points, config, images=1, written=(window[0], window[1])
    )  # the JPEG is not carried


# -- SwanLab --------------------------------------------------------------------------------------

#: SwanLab's run: a list rather than a None (SwanLab's config keeps no None).
SWANLAB_CONFIG: dict[str, Any] = {"lr": 0.1, "optimizer": {"name": "adam", "betas": [0.9, 0.999]}, "layers": [64, 32]}
_SWANLAB = """
import json, sys
import numpy as np
import swanlab

STEPS, CONFIG, root = {steps}, {config}, sys.argv[1]
S = swanlab.Settings
if hasattr(S, "Probe"):  # SwanLab 0.8+ (swanlab.sdk): nested settings, log_dir
    swanlab.init(project="imports", experiment_name="sdk-run", config=CONFIG, mode="offline", log_dir=root + "/swanlog",
                 settings=S(probe=S.Probe(monitor=False, git=False, requirements=False, conda=False),
                            terminal=S.Terminal(proxy_type="none")))
else:  # SwanLab 0.5.8 to 0.7.x: flat settings, logdir; before 0.6.2 no offline mode, only local (swanboard's store)
    import importlib.util
    offline = importlib.util.find_spec("swanlab.data.callbacker.offline") is not None
    quiet = dict(collect_hardware=False, hardware_monitor=False, collect_runtime=False, requirements_collect=False,
                 conda_collect=False, log_proxy_type="none")
    swanlab.init(project="imports", experiment_name="sdk-run", config=CONFIG, mode="offline" if offline else "local",
                 logdir=root + "/swanlog", settings=S(**{{k: v for k, v in quiet.items() if k in S.model_fields}}))
for step in range(STEPS):
    swanlab.log({{"train/loss": 1.0 / (step + 1), "acc": step / STEPS}}, step=step)
pixels = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
swanlab.log({{"note": swanlab.Text("a note"), "sample": swanlab.Image(pixels, caption="first"),
             "pair": [swanlab.Image(pixels), swanlab.Image(255 - pixels)]}}, step=STEPS)
swanlab.finish()
"""


def write_swanlab(root: Path) -> SdkRun:
    """An offline run the swanlab SDK wrote under ``root/swanlog``: scalars, a text and images.
    ``source`` is the ``run-*`` folder. SwanLab 0.5.8 to 0.6.1 have no offline mode: there it is a local-mode
    run (``root/swanlog/runs.swanlab`` beside the folder; the swanboard package must be installed)."""
    env = {"HOME": str(root / "home"), "SWANLAB_ROOT": str(root / "swanlab-root"), "SWANLAB_INTERACTIVE": "0"}
    (root / "home").mkdir(exist_ok=True)  # SwanLab before 0.8 refuses to start without the home folder
    script = textwrap.dedent(_SWANLAB).format(steps=STEPS, config=repr(SWANLAB_CONFIG))
    with _clocked() as window:
        _run_script(script, root, args=(str(root),), strip=("SWANLAB_",), env=env, timeout=120)
    [folder] = (root / "swanlog").glob("run-*")
    points = {
        "train/loss": {step: 1.0 / (step + 1) for step in range(STEPS)},
        "acc": {step: step / STEPS for step in range(STEPS)},
    }
    return SdkRun("swanlab", folder, points, dict(SWANLAB_CONFIG), images=3, written=(window[0], window[1]))


# -- Trackio --------------------------------------------------------------------------------------

_TRACKIO = """
import inspect, json, os, sys
import numpy as np
import trackio, trackio.utils
from tracking_trackio import store

STEPS, CONFIG = {steps}, {config}
Storage = store.sqlite_storage()  # None: trackio 0.0.3, which writes one CSV file per run
ROWS = [{{"train/loss": 1.0 / (step + 1), "acc": step / STEPS, "phase": f"p{{step % 2}}"}} for step in range(STEPS)]
os.makedirs(os.environ["TRACKIO_DIR"], exist_ok=True)  # trackio 0.0.17 writes there without making it
if not os.path.isabs(trackio.utils.TRACKIO_DIR):  # 0.0.3 to 0.0.5 keep their store in ./.trackio
    os.symlink(os.environ["TRACKIO_DIR"], trackio.utils.TRACKIO_DIR)
if Storage is None:  # 0.0.3: its own init and log, without the dashboard it would start (and wait on)
    for name, config, rows in (("sdk-run", CONFIG, ROWS), ("second", None, [{{"train/loss": 3.0}}])):
        trackio.init(project="imports", name=name, config=config, ui=False)
        for row in rows:
            trackio.log(row)
        trackio.finish()
elif not hasattr(Storage, "bulk_log"):  # 0.0.4 to 0.0.16: the storage calls of their dashboard's /log handler
    # (their init starts that dashboard on a local port; 0.0.4 and 0.0.5 wait on it)
    for name, config, rows in (("sdk-run", CONFIG, ROWS), ("second", {{}}, [{{"train/loss": 3.0}}])):
        storage = Storage("imports", name, config)
        for row in rows:
            storage.log(row)
else:
    QUIET = {{key: False for key in ("auto_log_cpu", "auto_log_gpu") if key in inspect.signature(trackio.init).parameters}}
    # trackio before 0.2 numbers the rows itself (0, 1, ...: the same steps here but for the second run's 7)
    AT = (lambda step: {{"step": step}}) if "step" in inspect.signature(trackio.log).parameters else (lambda step: {{}})
    trackio.init(project="imports", name="sdk-run", config=CONFIG, **QUIET)
    for step, row in enumerate(ROWS):
        trackio.log(row, **AT(step))
    pixels = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    media = {{}}
    if hasattr(trackio, "Image"):  # 0.2.8+
        media["sample"] = trackio.Image(pixels, caption="first")
    if hasattr(trackio, "Table"):  # 0.3.2+
        media["preds"] = trackio.Table(columns=["id", "label"], data=[[0, "cat"], [1, "dog"]])
    if media:
        trackio.log(media, **AT(STEPS))
    trackio.finish()
    trackio.init(project="imports", name="second", **QUIET)
    trackio.log({{"train/loss": 3.0}}, **AT(7))
    trackio.finish()
# Trackio's own reader: get_logs (get_metrics before 0.2.9; 0.0.3: its dashboard's load_run_data)
logs = {{name: store.run_logs("imports", name) for name in ("sdk-run", "second")}}
print(json.dumps(logs, default=str))
"""


def write_trackio(root: Path) -> SdkRun:
    """Two runs of one project in the store trackio wrote at ``root/trackio`` (its ``TRACKIO_DIR``,
    ``$HF_HOME/trackio`` for a release before 0.5.2, which ignores ``TRACKIO_DIR``, and a ``./.trackio`` link to
    it for 0.0.3 to 0.0.5): ``sdk-run`` (numbers, strings, an image, a table) and ``second`` (one point).
    ``info["logs"]`` holds the rows of each as Trackio's own reader gives them; the rest describes ``sdk-run``
    as a release with config, images and tables (0.4+) stores it. Releases before 0.0.17 write with their
    storage (0.0.3: its ``init`` without the dashboard), their ``init`` starting a dashboard server."""
    store = root / "trackio"
    (root / "home").mkdir(exist_ok=True)
    env = {
        "HOME": str(root / "home"),
        "MPLCONFIGDIR": str(root / "mpl"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TRACKIO_DIR": str(store),
        "HF_HOME": str(root),
        "HF_HUB_OFFLINE": "1",
    }
    script = textwrap.dedent(_TRACKIO).format(steps=STEPS, config=repr(NESTED_CONFIG))
    with _clocked() as window:
        # a cold `import trackio` before 0.24 imports gradio: tens of seconds on a loaded machine
        done = _run_script(script, root, strip=("TRACKIO_", "HF_"), env=env, timeout=300)
    points = {
        "train/loss": {step: 1.0 / (step + 1) for step in range(STEPS)},
        "acc": {step: step / STEPS for step in range(STEPS)},
    }
    return SdkRun(
        "trackio",
        store,
        points,
        dict(NESTED_CONFIG),
        images=1,
        written=(window[0], window[1]),
        info={"logs": _last_json(done)},
    )


# -- every backend --------------------------------------------------------------------------------


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
