"""Runs written in the calling process: TensorBoard, MLflow, DVCLive and Aim keep no process-wide state."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from unittest import mock

from ..transfer import CANONICAL_CONFIG, CANONICAL_POINTS, T0, canonical_time
from .common import NESTED_CONFIG, STEPS, SdkRun, canonical_points, canonical_times, clocked, working_directory


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

    from ...kit.png import encode_png

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
        canonical_points(),
        dict(CANONICAL_CONFIG),
        images=1,
        float32=True,
        times=canonical_times(),
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
        canonical_points(),
        dict(CANONICAL_CONFIG),  # params "0.001", "32", "adam" come back as 0.001, 32, "adam"
        times=canonical_times(),
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
        working_directory(folder.parent),
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
        canonical_points(),
        dict(CANONICAL_CONFIG),
        images=1,
        times=canonical_times(),
        written=(began, time.time()),
    )


# -- Aim ------------------------------------------------------------------------------------------


def write_aim(root: Path) -> SdkRun:
    """A repo with one run the aim SDK wrote: metrics in two contexts, text, images, a distribution.

    ``info["run_hash"]`` is the run's hash.
    """
    import numpy as np
    from aim import Distribution, Image, Run, Text

    with clocked() as window:
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
