"""The unwrapped writer (``tracker.tracker`` / ``tracker.writer``) offers SummaryWriter's writing methods.

Code written for the ``SummaryWriter`` accelerate hands out (``get_tracker("tensorboard", unwrap=True)``)
must run here without torch and land in the run's event file; everything is read back with
TensorBoard's own ``EventAccumulator``.
"""

from __future__ import annotations

import inspect
import io

import pytest
import tracking_core
from tracking_core import Histogram
from tracking_tensorboard import TensorBoardTracker

np = pytest.importorskip("numpy")


def started(tmp_path):
    tracker = TensorBoardTracker("direct", tmp_path / "logs")
    tracker.start()
    return tracker


def _decode(png: bytes):
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


#: torch.utils.tensorboard.SummaryWriter's parameters (torch 2.x), the writer must take them by the same names.
SUMMARY_WRITER_PARAMETERS = {
    "add_scalar": ["tag", "scalar_value", "global_step", "walltime", "new_style", "double_precision"],
    "add_scalars": ["main_tag", "tag_scalar_dict", "global_step", "walltime"],
    "add_histogram": ["tag", "values", "global_step", "bins", "walltime", "max_bins"],
    "add_histogram_raw": [
        "tag", "min", "max", "num", "sum", "sum_squares", "bucket_limits", "bucket_counts", "global_step", "walltime",
    ],
    "add_image": ["tag", "img_tensor", "global_step", "walltime", "dataformats"],
    "add_images": ["tag", "img_tensor", "global_step", "walltime", "dataformats"],
    "add_figure": ["tag", "figure", "global_step", "close", "walltime"],
    "add_text": ["tag", "text_string", "global_step", "walltime"],
    "add_hparams": ["hparam_dict", "metric_dict", "hparam_domain_discrete", "run_name", "global_step"],
    "flush": [],
    "close": [],
}  # fmt: skip


@pytest.mark.parametrize("method", sorted(SUMMARY_WRITER_PARAMETERS))
def test_writer_methods_have_summary_writer_signatures(tmp_path, method):
    tracker = started(tmp_path)
    parameters = list(inspect.signature(getattr(tracker.writer, method)).parameters)
    assert parameters == SUMMARY_WRITER_PARAMETERS[method]
    tracker.finish()


def test_tracker_and_writer_are_the_same_object(tmp_path):
    tracker = started(tmp_path)
    assert tracker.writer is tracker.tracker and tracker.writer.get_logdir() == str(tracker.log_dir)
    tracker.finish()


def test_scalars_text_and_scalars_groups_read_back(tmp_path, event_reader):
    tracker = started(tmp_path)
    writer = tracker.writer
    writer.add_scalar("loss", 0.5, global_step=3, walltime=1000.0)
    writer.add_scalar("loss", np.float32(0.25), 4)
    writer.add_scalar("precise", 0.1, 1, new_style=True, double_precision=True)
    writer.add_scalar("nostep", 2.0)
    writer.add_text("note", "**bold**", global_step=2)
    writer.add_scalars("group", {"a": 1.0, "b": 2.0}, global_step=5)
    writer.flush()
    reader = event_reader(tracker.log_dir)  # readable after flush, before close
    scalars = reader.scalars()
    assert scalars["loss"] == {3: 0.5, 4: 0.25} and scalars["nostep"] == {0: 2.0}
    assert scalars["precise"] == {1: 0.1}  # float64 kept exactly
    assert reader.accumulator.Tensors("loss")[0].wall_time == 1000.0
    assert reader.texts()["note"] == {2: "**bold**"}
    writer.close()
    for inner, value in (("a", 1.0), ("b", 2.0)):  # SummaryWriter's layout: one sub-run per inner key
        assert event_reader(tracker.log_dir / f"group_{inner}").scalars() == {"group": {5: value}}


def _histograms(reader, tag):
    """[(step, [[left, right, count], ...])] from the histograms plugin (TensorBoard migrates HistogramProto)."""
    return [(step, array.tolist()) for step, array in reader.arrays(tag)]


def test_add_histogram_and_add_histogram_raw(tmp_path, event_reader):
    tracker = started(tmp_path)
    writer = tracker.writer
    values = np.array([0.0, 0.5, 0.5, 1.0, 2.0])
    writer.add_histogram("weights", values, global_step=1, bins=4)
    writer.add_histogram("default_bins", np.random.default_rng(0).normal(size=1000), global_step=2)
    writer.add_histogram("merged", np.arange(100.0), global_step=3, bins=100, max_bins=10)
    writer.add_histogram_raw(
        "raw", min=0.0, max=3.0, num=6, sum=9.0, sum_squares=19.0,
        bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1, 2, 3], global_step=4,
    )  # fmt: skip
    with pytest.raises(ValueError, match="same length"):
        writer.add_histogram_raw("bad", 0, 1, 1, 1, 1, [1.0], [1, 2])
    tracker.finish()
    reader = event_reader(tracker.log_dir)
    assert set(reader.tags("histograms")) == {"weights", "default_bins", "merged", "raw"}
    ((step, buckets),) = _histograms(reader, "weights")
    assert step == 1 and [count for _, _, count in buckets] == [1, 2, 1, 1]
    assert buckets[0][0] == 0.0 and buckets[-1][1] == 2.0
    ((_, buckets),) = _histograms(reader, "default_bins")
    assert sum(count for _, _, count in buckets) == 1000
    ((_, buckets),) = _histograms(reader, "merged")
    assert len(buckets) == 10 and sum(count for _, _, count in buckets) == 100
    ((_, buckets),) = _histograms(reader, "raw")
    assert buckets == [[0.0, 1.0, 1.0], [1.0, 2.0, 2.0], [2.0, 3.0, 3.0]]


def test_add_image_and_add_images_with_dataformats(tmp_path, event_reader):
    rgb = (np.arange(8 * 12 * 3) % 251).astype(np.uint8).reshape(8, 12, 3)
    tracker = started(tmp_path)
    writer = tracker.writer
    writer.add_image("chw", rgb.transpose(2, 0, 1), global_step=1)  # SummaryWriter's default: CHW
    writer.add_image("hwc", rgb, 2, dataformats="HWC")
    writer.add_image("hw", rgb[..., 0], 3, dataformats="HW")
    writer.add_image("float", rgb.transpose(2, 0, 1) / 255.0, 4)
    writer.add_images("nchw", np.stack([rgb, rgb[::-1]]).transpose(0, 3, 1, 2), global_step=5)
    writer.add_images("nhwc", np.stack([rgb, rgb]), 6, dataformats="NHWC")
    with pytest.raises(ValueError, match="shape"):
        writer.add_image("wrong", rgb, dataformats="CHW")  # an HWC array is not CHW
    tracker.finish()
    images = event_reader(tracker.log_dir).images()
    for tag in ("chw", "hwc"):
        assert np.array_equal(_decode(images[tag][0][1][0]), rgb), tag
    assert np.array_equal(_decode(images["hw"][0][1][0]), rgb[..., 0])
    assert np.abs(_decode(images["float"][0][1][0]).astype(int) - rgb).max() <= 1
    ((step, pngs),) = images["nchw"]
    assert step == 5 and len(pngs) == 2 and np.array_equal(_decode(pngs[1]), rgb[::-1])
    assert [len(p) for _, p in images["nhwc"]] == [2]
    assert [step for step, _ in tracker.read_back_images()["nchw"]] == [5, 5]


def test_add_figure(tmp_path, event_reader):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    tracker = started(tmp_path)
    tracker.writer.add_figure("curve", figure, global_step=2)
    tracker.finish()
    ((step, (png,)),) = event_reader(tracker.log_dir).images()["curve"]
    assert step == 2 and _decode(png).shape[:2] == (50, 100)


def test_add_hparams_in_the_run_and_in_a_named_sub_run(tmp_path, event_reader):
    from tensorboard.plugins.hparams import metadata

    tracker = started(tmp_path)
    writer = tracker.writer
    writer.add_hparams({"lr": 0.1, "opt": "adam", "amp": True}, {"hparam/accuracy": 0.75}, {"opt": ["adam", "sgd"]})
    writer.add_hparams({"lr": 0.2}, {"hparam/accuracy": 0.5}, run_name="second")
    with pytest.raises(ValueError, match="should be one of"):
        writer.add_hparams({"bad": [1, 2]}, {})
    tracker.finish()
    reader = event_reader(tracker.log_dir)
    assert reader.hparams() == {"lr": 0.1, "opt": "adam", "amp": True}
    assert reader.scalars()["hparam/accuracy"] == {0: 0.75}
    content = reader.accumulator.PluginTagToContent("hparams")[metadata.EXPERIMENT_TAG]
    experiment = metadata.parse_experiment_plugin_data(content)
    infos = {info.name: info for info in experiment.hparam_infos}
    assert set(infos) == {"lr", "opt", "amp"}
    assert [v.string_value for v in infos["opt"].domain_discrete.values] == ["adam", "sgd"]
    assert [m.name.tag for m in experiment.metric_infos] == ["hparam/accuracy"]
    second = event_reader(tracker.log_dir / "second")
    assert second.hparams() == {"lr": 0.2} and second.scalars() == {"hparam/accuracy": {0: 0.5}}


def test_purge_step_hides_the_events_a_restart_replaces(tmp_path):
    from tensorboard.backend.event_processing import event_accumulator

    first = started(tmp_path)
    for step in range(5):
        first.log({"x": float(step)}, step=step)
    first.finish()
    second = TensorBoardTracker("direct", tmp_path / "logs", log_dir=first.log_dir, purge_step=3)
    second.start()
    second.log({"x": 30.0}, step=3)
    second.finish()
    # SummaryWriter's restart marker (SessionLog.START at purge_step), honoured by the EventAccumulator
    accumulator = event_accumulator.EventAccumulator(str(first.log_dir))
    accumulator.Reload()
    assert [(e.step, e.value) for e in accumulator.Scalars("x")] == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 30.0)]


def test_writer_calls_from_the_training_thread_land_in_the_managed_run(tmp_path, event_reader):
    run = tracking_core.init("proj", log_with="tensorboard", logging_dir=tmp_path / "logs", on_error="raise")
    writer = run.get_tracker("tensorboard", unwrap=True)
    writer.add_histogram("w", np.arange(10.0), global_step=1, bins=5)
    writer.add_scalar("direct", 1.0, global_step=1)
    run.log({"loss": 1.0}, step=1)
    assert run.finish().ok
    reader = event_reader(run.trackers[0].log_dir)
    assert reader.tags("histograms") == ["w"] and reader.scalars()["direct"] == {1: 1.0}


def test_log_histogram_maps_onto_tensorboard_histograms(tmp_path, event_reader):
    run = tracking_core.init("proj", log_with="tensorboard", logging_dir=tmp_path / "logs", on_error="raise")
    run.log_histogram("grads", [0.0, 1.0, 1.0, 2.0, 3.0], step=2, bins=3)
    run.log_histogram("counts", counts=[1, 4], edges=[0.0, 0.5, 1.0], step=3)
    assert run.finish().ok
    reader = event_reader(run.trackers[0].log_dir)
    ((step, buckets),) = _histograms(reader, "grads")
    assert step == 2 and [count for *_, count in buckets] == [1, 2, 2]
    assert buckets[0][0] == 0.0 and buckets[-1][1] == 3.0
    assert _histograms(reader, "counts") == [(3, [[0.0, 0.5, 1.0], [0.5, 1.0, 4.0]])]
    assert "grads/mean" not in reader.scalars()  # a real histogram, not the summary metrics


def test_direct_log_histogram(tmp_path, event_reader):
    tracker = started(tmp_path)
    histogram = Histogram(counts=[2.0, 3.0], edges=[-1.0, 0.0, 1.0], count=5, total=0.5, sum_squares=3.0, min=-1, max=1)
    tracker.log_histogram("h", histogram, step=7)
    tracker.finish()
    assert _histograms(event_reader(tracker.log_dir), "h") == [(7, [[-1.0, 0.0, 2.0], [0.0, 1.0, 3.0]])]


def test_a_rewind_purges_the_earlier_points_from_its_step_on_in_tensorboards_reader(tmp_path):
    """``resume_step`` behind the last step: a second process's file with a restart event. TensorBoard's own
    accumulator (and the tracker's reader) keep each step once, the later process's points from the rewind on."""
    from tracking_core.testing.resume import finished_run, loss, started_tracker

    from .conftest import EventReader

    first = finished_run(TensorBoardTracker, tmp_path, range(150))
    second = started_tracker(TensorBoardTracker, tmp_path, first.resume_state())
    assert "TensorBoard drop the earlier" in second.rewind(100)
    for step in range(100, 200):
        second.log({"loss": loss(step) + 1.0}, step=step)
    second.finish()
    expected = {step: loss(step) + (1.0 if step >= 100 else 0.0) for step in range(200)}
    points = EventReader(second.log_dir).arrays("loss")
    assert [step for step, _ in points] == list(range(200))  # each step once: the earlier 100..149 are purged
    assert [float(value) for _, value in points] == pytest.approx([expected[step] for step in range(200)])
    assert dict(second.read_back_history()["loss"]) == pytest.approx(expected)
    assert len(second.read_back_history()["loss"]) == 200


def test_a_batch_mixing_plain_scalars_with_text_and_nan_keeps_every_point_in_its_order(tmp_path, event_reader):
    tracker = started(tmp_path)
    entries = [({"loss": 1.0 / (step + 1)}, step, {}) for step in range(40)]
    entries[10] = ({"loss": float("nan"), "note": "restart"}, 10, {})
    entries[20] = ({"loss": 0.125, "lr": 3}, 20, {"walltime": 1234.5})
    tracker.log_batch(entries)
    tracker.finish()
    reader = event_reader(tracker.log_dir)
    loss = reader.arrays("loss")
    assert [step for step, _ in loss] == list(range(40))
    assert np.isnan(loss[10][1]) and float(loss[20][1]) == 0.125 and float(loss[39][1]) == np.float32(1 / 40)
    assert reader.texts()["note"] == {10: "restart"} and reader.scalars()["lr"] == {20: 3.0}
    assert reader.accumulator.Tensors("lr")[0].wall_time == 1234.5
