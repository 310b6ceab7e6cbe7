"""``log_histogram``: binned in the caller, the SDK's own histogram where there is one, summaries elsewhere."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from tracking_core import Dispatcher, Histogram, TrackingWarning, register_tracker_class
from tracking_core.cli.replay import replay_into
from tracking_core.contract.histogram import histogram_from_counts, histogram_of
from tracking_core.store.journal import read_journal
from tracking_core.testing import MemoryTracker


class HistogramTracker(MemoryTracker):
    name = "histograms"

    def log_histogram(self, name, histogram, step=None, **kwargs):
        self.histograms = [*getattr(self, "histograms", []), (name, step, histogram)]


@pytest.fixture
def histograms(memory):
    register_tracker_class(HistogramTracker)
    return HistogramTracker


def test_values_are_binned_in_the_caller_and_passed_to_backends_with_histograms(histograms, tmp_path):
    values = np.arange(100, dtype=np.float32)
    run = Dispatcher(log_with=["histograms"], logging_dir=tmp_path)
    run.init_trackers("p")
    run.log_histogram("weights", values, step=3, bins=10)
    values[:] = -1  # changed after the call: the histogram was taken already
    run.finish()
    [(name, step, histogram)] = MemoryTracker.runs[-1].histograms
    assert (name, step) == ("weights", 3)
    assert histogram.counts == [10.0] * 10 and len(histogram.edges) == 11
    assert (histogram.count, histogram.min, histogram.max, histogram.total) == (100, 0.0, 99.0, 4950.0)
    assert histogram.mean == pytest.approx(49.5) and histogram.std == pytest.approx(np.arange(100).std())


def test_backends_without_histograms_get_summaries_and_one_warning(memory, tmp_path):
    run = Dispatcher(log_with=["memory"], logging_dir=tmp_path)
    run.init_trackers("p")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.log_histogram("grads", [1.0, 2.0, 3.0], step=0)
        run.log_histogram("grads", [1.0, 2.0, 3.0], step=1)
    run.finish()
    said = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert len(said) == 1 and "grads/count" in said[0] and "memory" in said[0]
    metrics = MemoryTracker.runs[-1].metrics
    assert [step for step, _ in metrics] == [0, 1]
    assert metrics[0][1] == {
        "grads/count": 3,
        "grads/min": 1.0,
        "grads/max": 3.0,
        "grads/mean": 2.0,
        "grads/std": pytest.approx(math.sqrt(2 / 3)),
    }


def test_the_journal_keeps_histograms_and_replay_delivers_them(histograms, tmp_path):
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path / "a")
    run.init_trackers("p")
    run.log_histogram("w", counts=[1, 2, 3], edges=[0.0, 1.0, 2.0, 3.0], step=5)
    run.finish()
    [entry] = [e for e in read_journal(run.run_dir / "journal.jsonl") if e["type"] == "histogram"]
    assert entry["name"] == "w" and entry["step"] == 5 and entry["histogram"]["counts"] == [1.0, 2.0, 3.0]
    target = Dispatcher(log_with=["histograms"], logging_dir=tmp_path / "b")
    target.init_trackers("p")
    replay_into(target, run.run_dir / "journal.jsonl", progress=False)
    target.finish()
    [(name, step, histogram)] = MemoryTracker.runs[-1].histograms
    assert (name, step, histogram.counts, histogram.edges) == ("w", 5, [1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0])


def test_non_finite_values_are_left_out_with_one_warning(histograms, tmp_path):
    run = Dispatcher(log_with=["histograms"], logging_dir=tmp_path)
    run.init_trackers("p")
    with pytest.warns(TrackingWarning, match="2 non-finite"):
        run.log_histogram("w", [1.0, float("nan"), float("inf"), 2.0])
    with pytest.warns(TrackingWarning, match="no finite value"):
        run.log_histogram("empty", [float("nan")])
    report = run.finish()
    [(_, _, histogram)] = MemoryTracker.runs[-1].histograms
    assert histogram.count == 2
    assert "empty" in report.rejected_values


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, ValueError, "needs `values`"),
        ({"values": [1.0], "counts": [1]}, ValueError, "not both"),
        ({"values": ["a", "b"]}, TypeError, "must be numbers"),
        ({"values": [1.0], "bins": 0}, ValueError, "bins must be"),
        ({"counts": [1, 2], "edges": [0.0, 1.0]}, ValueError, "one more entry"),
        ({"counts": [1, 2], "edges": [0.0, 2.0, 1.0]}, ValueError, "increasing"),
        ({"counts": [-1], "edges": [0.0, 1.0]}, ValueError, "not negative"),
        ({"values": [1.0], "step": -1}, ValueError, "step"),
    ],
)
def test_bad_arguments_raise_at_the_call_naming_the_parameter(histograms, tmp_path, kwargs, error, match):
    run = Dispatcher(log_with=["histograms"], logging_dir=tmp_path)
    run.init_trackers("p")
    with pytest.raises(error, match=match):
        run.log_histogram("w", **kwargs)
    run.finish()
    assert not hasattr(MemoryTracker.runs[-1], "histograms")


def test_pure_python_and_numpy_binning_agree():
    rng = np.random.default_rng(0)
    values = rng.normal(size=1000)
    by_numpy, _ = histogram_of(values, 16)
    by_python, _ = histogram_of(values.tolist(), 16)
    assert by_numpy.counts == by_python.counts
    assert by_numpy.edges == pytest.approx(by_python.edges)
    assert by_numpy.total == pytest.approx(by_python.total)
    single, _ = histogram_of([2.0, 2.0], 4)
    assert single.count == 2 and single.min == single.max == 2.0 and sum(single.counts) == 2


def test_counts_and_edges_estimate_the_moments():
    histogram = histogram_from_counts([0, 2, 2, 0], [0.0, 1.0, 2.0, 3.0, 4.0])
    assert isinstance(histogram, Histogram)
    assert (histogram.count, histogram.min, histogram.max, histogram.mean) == (4, 1.0, 3.0, 2.0)
    assert Histogram.from_json(histogram.to_json()) == histogram
