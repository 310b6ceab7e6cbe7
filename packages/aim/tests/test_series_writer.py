"""The batched route for numeric points stores exactly what Aim's own ``Run.track`` stores."""

from __future__ import annotations

import gc
import importlib.util
import math
import random
from pathlib import Path
from typing import Any

from tracking_aim import AimTracker
from tracking_aim.series_writer import SeriesWriter

_spec = importlib.util.spec_from_file_location("_tracking_aim_readback", Path(__file__).with_name("aim_readback.py"))
readback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readback)

T0 = 1_700_000_000.0


def awkward_points() -> list[tuple[dict, int | None, int | None, dict | None, float]]:
    """(values, step, epoch, context, time): contexts, implicit steps, int/float mixes, NaN, rewrites."""
    rng = random.Random(7)
    points = []
    for step in range(300):
        values = {
            "loss": rng.random(),
            "correct": rng.randint(0, 100),
            "mixed": step if step % 3 else step / 2,  # int and float in one series: Aim makes it "number"
            "spiky": float("nan") if step % 7 == 0 else -step * 1.5,
        }
        if step == 150:
            values["late"] = 1.0  # a series that starts in the middle
        context = {"subset": "val"} if step % 5 == 0 else None
        epoch = step // 50 if step % 2 else None
        points.append((values, step if step % 11 else None, epoch, context, T0 + step))
    points.append(({"loss": 9.0}, 10, None, None, T0 + 1000))  # a step written again
    points.append(({"loss": -9.0, "correct": 1000}, 400, 3, None, T0 + 1001))  # a gap, new min and max
    return points


def new_run(repo: Path) -> Any:
    from aim.sdk.run import Run

    return Run(repo=str(repo), system_tracking_interval=None, capture_terminal_logs=False, log_system_params=False)


def stored_records(repo: Path, run_hash: str) -> dict[tuple[str, bytes], bytes]:
    """Every key and value of the run's two RocksDB databases, the run hash replaced by ``H``."""
    import aimrocks

    records = {}
    for database in ("meta", "seqs"):
        db = aimrocks.DB(str(repo / ".aim" / database / "chunks" / run_hash), aimrocks.Options(), read_only=True)
        iterator = db.iteritems()
        iterator.seek_to_first()
        for key, value in iterator:
            records[database, key.replace(run_hash.encode(), b"H")] = value.replace(run_hash.encode(), b"H")
    return records


def series_as_read(repo: Path, run_hash: str) -> dict[tuple[str, str], tuple[list, ...]]:
    run = readback.get_run(repo, run_hash)
    out = {}
    for metric in run.metrics():
        steps, (values, epochs, times) = metric.data.items_list()
        out[metric.name, repr(metric.context.to_dict())] = tuple(
            [str(item) for item in column] for column in (steps, values, epochs, times)
        )  # str(): NaN == NaN
    return out


def test_batched_points_are_byte_identical_to_aims_own(tmp_path: Path) -> None:
    by_aim, batched = new_run(tmp_path), new_run(tmp_path)
    writer = SeriesWriter.for_run(batched)
    assert writer is not None, "a local run should get the batched route"
    for index, (values, step, epoch, context, when) in enumerate(awkward_points()):
        by_aim._tracker._track(dict(values), when, None, step, epoch, context=context)
        writer.track(dict(values), step, epoch, context, when)
        if index % 37 == 0:
            writer.commit()
    writer.close()
    by_aim.close()
    batched.close()
    hashes = by_aim.hash, batched.hash
    del by_aim, batched, writer
    gc.collect()  # RocksDB closes a database (and its background flushes) only when its handle is freed

    expected, written = (stored_records(tmp_path, run_hash) for run_hash in hashes)
    end_time = ("meta", b"meta\xfechunks\xfeH\xfeend_time\xfe")
    differing = {key for key in expected.keys() | written.keys() if expected.get(key) != written.get(key)}
    assert differing == {end_time}, sorted(differing)[:10]
    assert len(written) > 4 * 300 * 4, "the databases hold fewer records than points logged"

    read = series_as_read(tmp_path, hashes[1])
    assert read == series_as_read(tmp_path, hashes[0])
    steps, values, _epochs, times = read["loss", "{}"]
    points = dict(zip(steps, zip(values, times)))
    assert points["10"] == ("9.0", str(T0 + 1000)), "a step written twice should keep the later point"
    assert steps[-1] == "400" and points["400"] == ("-9.0", str(T0 + 1001))


def test_points_keep_the_time_log_was_called(tmp_path: Path) -> None:
    tracker = AimTracker("times", tmp_path)
    tracker.start()
    assert tracker._writer is not None
    tracker.log_batch([({"loss": 1.0 / (step + 1)}, step, {"timestamp": T0 + step}) for step in range(50)])
    tracker.log({"loss": 0.5, "note": "text too"}, step=50, timestamp=T0 + 50, epoch=2)
    tracker.finish()
    run = readback.get_run(tmp_path, tracker.run_hash)
    steps, (values, epochs, times) = run.get_metric("loss", readback_context()).data.items_list()
    assert list(steps) == list(range(51)) and list(times) == [T0 + step for step in range(51)]
    assert math.isnan(epochs[-2]) and epochs[-1] == 2 and values[-1] == 0.5  # Aim reads a missing epoch as NaN
    text_steps, (_texts, _epochs, text_times) = run.get_text_sequence("note", readback_context()).data.items_list()
    assert (list(text_steps), list(text_times)) == ([50], [T0 + 50])


def readback_context() -> Any:
    from aim.storage.context import Context

    return Context({})


def test_a_resumed_run_continues_its_series(tmp_path: Path) -> None:
    """A resumed run (``run_hash``) starts from the series Aim preloads: steps, last and extremes carry on."""
    first = AimTracker("resumed", tmp_path)
    first.start()
    first.log_batch([({"loss": 10.0 - step, "seen": step}, step, {"timestamp": T0 + step}) for step in range(10)])
    first.finish()

    again = AimTracker("resumed", tmp_path, run_hash=first.run_hash)
    again.start()
    again.log_batch([({"loss": 20.0 - step, "seen": step}, step, {"timestamp": T0 + step}) for step in range(10, 20)])
    again.log({"loss": 0.5}, step=None)  # the next step of the first series: 20
    again.finish()

    stored = again.read_back_metrics()
    assert stored["loss"] == {
        **{step: 10.0 - step for step in range(10)},
        **{step: 20.0 - step for step in range(10, 20)},
        20: 0.5,
    }
    assert stored["seen"] == {step: step for step in range(20)}
    traces = readback.get_run(tmp_path, first.run_hash).meta_run_tree.collect(("traces",))
    (loss,) = [series["loss"] for series in traces.values() if "loss" in series]
    assert (loss["last"], loss["last_step"], loss["max"], loss["min"]) == (0.5, 20, 10.0, 0.5)
