"""The batched row writer against ``Live.log_metric`` itself: the same points through both, into two folders,
leave the same bytes in every file and the same ``Live`` state, read back with DVCLive's own readers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from tracking_dvclive import rows
from tracking_dvclive.offline import offline_live_class


def _live(folder: Path, **kwargs: Any) -> Any:
    from dvclive import Live

    return offline_live_class(Live)(dir=str(folder), save_dvc_exp=False, dvcyaml=None, **kwargs)


def _one_by_one(live: Any, points: list[rows.Point]) -> None:
    for name, step, value, options in points:
        live.step = step
        live.log_metric(name, value, **options)


def _files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*.tsv"))}


def _both(tmp_path: Path, batches: list[list[rows.Point]], **kwargs: Any) -> tuple[Any, Any]:
    reference, batched = _live(tmp_path / "reference", **kwargs), _live(tmp_path / "batched", **kwargs)
    for points in batches:
        _one_by_one(reference, points)
        rows.log_points(batched, points)
        batched.step = points[-1][1]
        reference.make_summary()
        batched.make_summary()
    return reference, batched


def _assert_same(tmp_path: Path, reference: Any, batched: Any) -> None:
    from dvclive.utils import parse_json, parse_tsv

    assert _files(tmp_path / "reference") == _files(tmp_path / "batched")
    assert _files(tmp_path / "batched")  # something was written
    assert list(batched.summary) == list(reference.summary)  # the order metrics.json lists them in
    assert parse_json(batched.metrics_file) == parse_json(reference.metrics_file)
    assert {name: metric.step for name, metric in batched._metrics.items()} == {
        name: metric.step for name, metric in reference._metrics.items()
    }
    for path in sorted((tmp_path / "batched").rglob("*.tsv")):
        twin = tmp_path / "reference" / path.relative_to(tmp_path / "batched")
        assert parse_tsv(path) == parse_tsv(twin)


MIXED: list[rows.Point] = [
    ("train/loss", 0, 0.5, {}),
    ("acc", 0, 1, {}),
    ("note", 0, 'a "quoted"\ttab', {}),
    ("train/loss", 1, math.nan, {}),
    ("train/lr", 1, math.inf, {}),
    ("train/lr", 2, -math.inf, {}),
    ("acc", 2, 0.25, {"plot": False}),
    ("train/loss", 3, 1e-300, {}),
    ("deep/a/b/c", 3, 7, {}),
]


def test_a_batch_writes_what_log_metric_writes(tmp_path: Path) -> None:
    reference, batched = _both(tmp_path, [MIXED])
    _assert_same(tmp_path, reference, batched)
    loss = tmp_path / "batched" / "plots" / "metrics" / "train" / "loss.tsv"
    assert loss.read_text().splitlines() == ["step\tloss", "0\t0.5", "1\tnan", "3\t1e-300"]
    assert batched.summary["acc"] == 0.25  # plot=False: the summary only, as DVCLive does


def test_later_batches_append_under_one_header(tmp_path: Path) -> None:
    later = [(name, step + 10, value, options) for name, step, value, options in MIXED]
    reference, batched = _both(tmp_path, [MIXED, later, [("new", 20, 2.0, {})]])
    _assert_same(tmp_path, reference, batched)
    acc = (tmp_path / "batched" / "plots" / "metrics" / "acc.tsv").read_text().splitlines()
    assert acc == ["step\tacc", "0\t1", "10\t1"]


def test_a_resumed_folder_gets_rows_after_its_own(tmp_path: Path) -> None:
    for name in ("reference", "batched"):
        earlier = _live(tmp_path / name)
        _one_by_one(earlier, MIXED[:3])
        earlier.make_summary()
    reference, batched = _both(tmp_path, [MIXED[3:]], resume=True)
    _assert_same(tmp_path, reference, batched)


def test_timestamps_take_dvclives_column_layout(tmp_path: Path) -> None:
    points: list[rows.Point] = [("t", step, step / 2, {"timestamp": True}) for step in range(3)]
    live = _live(tmp_path / "batched")
    rows.log_points(live, points)
    lines = (tmp_path / "batched" / "plots" / "metrics" / "t.tsv").read_text().splitlines()
    assert lines[0] == "timestamp\tstep\tt"
    assert [line.split("\t")[1:] for line in lines[1:]] == [["0", "0.0"], ["1", "0.5"], ["2", "1.0"]]
    assert all(int(line.split("\t")[0]) > 1_600_000_000_000 for line in lines[1:])


@pytest.mark.parametrize("steps", [1, 250])
def test_the_tracker_stores_every_point_once(tmp_path: Path, steps: int) -> None:
    from dvclive.utils import parse_tsv
    from tracking_dvclive import DVCLiveTracker

    tracker = DVCLiveTracker("rows", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_batch([({f"m{index}": step * 100 + index for index in range(20)}, step, {}) for step in range(steps)])
    tracker.finish()
    metrics = Path(tracker.dir) / "plots" / "metrics"
    for index in range(20):
        table = parse_tsv(metrics / f"m{index}.tsv")
        assert [(int(row["step"]), int(row[f"m{index}"])) for row in table] == [
            (step, step * 100 + index) for step in range(steps)
        ]
    assert tracker.live.step == steps - 1
