"""Runs written by a fresh interpreter with an empty ``HOME``: W&B, Comet, ClearML, SwanLab and Trackio keep
process-wide state (a service process, environment variables read at import, a task singleton)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from .common import NESTED_CONFIG, STEPS, SdkRun, clocked, last_json, run_script

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
    with clocked() as window:
        done = run_script(
            f"STEPS = {STEPS}\n" + textwrap.dedent(_WANDB), root, args=(str(root),), strip=("WANDB_",), env=env
        )
    points = {
        "train/loss": {step: 1.0 / (step + 1) for step in range(STEPS)},
        "acc": {step: step / STEPS for step in range(STEPS)},
        "eval.loss": {STEPS - 1: 0.5},
        "eval.acc": {STEPS - 1: 0.75},
    }
    return SdkRun(
        "wandb", Path(last_json(done)["folder"]), points, dict(NESTED_CONFIG), images=3, written=(window[0], window[1])
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
    with clocked() as window:
        done = run_script(script, root, args=(str(root / "offline"),), strip=("COMET_",), env=env)
    points = {
        "train/loss": {step: 1.0 / (step + 1) for step in range(STEPS)},
        "acc": {step: step / STEPS for step in range(STEPS)},
    }
    archive = root / "offline" / f"{last_json(done)['key']}.zip"
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
    with clocked() as window:
        done = run_script(
            textwrap.dedent(_CLEARML).format(steps=STEPS), root, strip=("CLEARML_", "TRAINS_"), env=env, timeout=120
        )
    points = {
        "loss": {step: 1.0 / (step + 1) for step in range(STEPS)},
        "acc/val": {step: step / STEPS for step in range(STEPS)},
    }
    config = {"lr": 0.1, "optimizer": {"name": "adam", "eps": 1e-8}, "steps": 20, "amp": True}
    folder = Path(last_json(done)["folder"])
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
    with clocked() as window:
        run_script(script, root, args=(str(root),), strip=("SWANLAB_",), env=env, timeout=120)
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
    with clocked() as window:
        # a cold `import trackio` before 0.24 imports gradio: tens of seconds on a loaded machine
        done = run_script(script, root, strip=("TRACKIO_", "HF_"), env=env, timeout=300)
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
        info={"logs": last_json(done)},
    )


# -- every backend --------------------------------------------------------------------------------
