"""A logged figure is the figure as it was at ``log_figure``, whatever the caller does with it afterwards."""

from __future__ import annotations

import json
import threading
import warnings

import pytest
from tracking_core import Dispatcher, TrackingWarning
from tracking_core.testing import MemoryTracker

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")


@pytest.fixture
def stalled_memory(memory):
    """Deliveries wait for ``release``, so the caller changes the figure before any backend sees it."""
    release = threading.Event()
    original = MemoryTracker.log_figure

    def log_figure(self, figure, name, step=None, **kwargs):
        release.wait(10)
        original(self, figure, name, step, **kwargs)

    MemoryTracker.log_figure = log_figure
    yield release
    MemoryTracker.log_figure = original


def test_a_reused_figure_is_logged_as_it_was(stalled_memory, tmp_path):
    run = Dispatcher(log_with=["memory", "jsonl"], logging_dir=tmp_path)
    run.init_trackers("figures")
    figure, axes = plt.subplots()
    for epoch in range(3):
        axes.clear()
        axes.plot([epoch, epoch, epoch])
        axes.set_ylim(0, 3)
        run.log_figure(figure, "curve", step=epoch)
    plt.close(figure)  # closed before any backend drew it
    figures_before = plt.get_fignums()
    stalled_memory.set()
    report = run.finish()

    assert report.ok, str(report)
    delivered = MemoryTracker.runs[-1].figures
    assert [(name, step) for name, step, _ in delivered] == [("curve", 0), ("curve", 1), ("curve", 2)]
    for epoch, (_, _, copy) in enumerate(delivered):
        assert copy is not figure and list(copy.axes[0].lines[0].get_ydata()) == [epoch] * 3
    assert len({id(copy) for _, _, copy in delivered}) == 3
    assert plt.get_fignums() == figures_before == [], "copies were registered with pyplot"
    journal_path = next(tmp_path.rglob("journal.jsonl"))
    journal = [json.loads(line) for line in journal_path.read_text().splitlines()]
    pngs = [(journal_path.parent / entry["path"]).read_bytes() for entry in journal if entry.get("type") == "figure"]
    assert len(pngs) == len(set(pngs)) == 3, "the journal did not draw each epoch's figure"


def test_each_backend_gets_its_own_copy(memory, tmp_path):
    from tracking_core import register_tracker_class

    class Other(MemoryTracker):
        name = "other-memory"

    register_tracker_class(Other)
    run = Dispatcher(log_with=["memory", "other-memory"], logging_dir=tmp_path)
    run.init_trackers("figures")
    figure, axes = plt.subplots()
    axes.plot([1, 2])
    run.log_figure(figure, "f", step=0)
    run.finish()
    (first,), (second,) = ([fig for _, _, fig in tracker.figures] for tracker in MemoryTracker.runs[-2:])
    assert first is not second and first is not figure
    plt.close(figure)


def test_an_uncopyable_figure_is_passed_on_with_one_warning(memory, tmp_path):
    class Unpicklable:
        """Stands for a figure holding a live resource (a lock, a socket) that cannot be copied."""

        def __init__(self):
            self.lock = threading.Lock()

        def savefig(self, *args, **kwargs):
            """Draws like a matplotlib figure, so the call accepts it."""

    run = Dispatcher(log_with="memory", logging_dir=tmp_path)
    run.init_trackers("figures")
    figure = Unpicklable()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.log_figure(figure, "live", step=0)
        run.log_figure(figure, "live", step=1)
    run.finish()
    messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert len(messages) == 1 and "could not be copied" in messages[0] and "flush()" in messages[0], messages
    assert [fig for _, _, fig in MemoryTracker.runs[-1].figures] == [figure, figure]
