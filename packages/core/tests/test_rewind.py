"""``resume_step``: a run resumed from a checkpoint behind its last step counts each step once."""

from __future__ import annotations

import json

import pytest
from tracking_core import Dispatcher, register_tracker_class
from tracking_core.cli.replay import replay
from tracking_core.cli.show import show
from tracking_core.contract.tracker import MARKER_KEY
from tracking_core.store.journal import JournalSummary
from tracking_core.store.manifest import MANIFEST_NAME
from tracking_core.store.rewind import RewindPoint, current_entries

from .test_resume import ResumableMemory, _killed_with_records_left_in_the_journal


def _train(tmp_path, steps, **options):
    run = Dispatcher(log_with=["jsonl", "resumable"], logging_dir=tmp_path, **options)
    run.init_trackers("proj", config={"lr": 0.1})
    first = run.state.step + 1
    for step in range(first, first + steps):
        run.log({"loss": 1.0 / (step + 1)})
    return run, run.finish()


@pytest.fixture
def resumable(memory):
    register_tracker_class(ResumableMemory)


@pytest.mark.parametrize("delivery", ["thread", "process"])
def test_a_rewound_run_holds_each_step_once_in_the_journal_show_and_replay(tmp_path, resumable, delivery):
    first, _ = _train(tmp_path, 150)
    second, report = _train(tmp_path, 100, resume=True, resume_step=100, delivery=delivery)
    assert second.run_dir == first.run_dir and second.state.step == 199
    summary = JournalSummary(first.run_dir)
    assert [step for step, _ in summary.metrics["loss"]] == list(range(200))
    assert summary.superseded == 50 and summary.counts["rewind"] == 1
    manifest = json.loads((first.run_dir / MANIFEST_NAME).read_text())
    (point,) = manifest["rewinds"]
    assert (point["step"], point["last_seq"]) == (100, 150) and manifest["last_step"] == 199
    assert any("skip the earlier points from step 100" in note for note in report.backends["jsonl"].notes)
    # a backend without a way to drop points gets the marker, and the report says so
    resumable_notes = report.backends["resumable"].notes
    assert any(f"the {MARKER_KEY} marker at step 100" in note for note in resumable_notes), resumable_notes
    assert report.backends["jsonl"].delivered == 101  # this process's config and 100 points: nothing again
    text = show([first.run_dir])
    assert "rewound  1 time(s): 50 points" in text and "200" in text
    copy = replay(first.run_dir / "journal.jsonl", to="jsonl", new_run=True, progress=False)
    assert copy.ok
    replayed = JournalSummary(copy.run_dir)
    assert [step for step, _ in replayed.metrics["loss"]] == list(range(200))
    assert replayed.superseded == 0


def test_a_later_resume_carries_on_from_the_rewound_timeline(tmp_path, resumable):
    _train(tmp_path, 150)
    _train(tmp_path, 10, resume=True, resume_step=100)  # steps 100..109, then the process ends
    third, _ = _train(tmp_path, 5, resume=True)
    assert third.state.step == 114, "the earlier timeline's step 149 must not count after the rewind"
    summary = JournalSummary(third.run_dir)
    assert [step for step, _ in summary.metrics["loss"]] == list(range(115))


def test_resume_step_ahead_or_on_a_new_run_supersedes_nothing(tmp_path, resumable):
    fresh, _ = _train(tmp_path / "a", 3, resume=True, resume_step=50)
    assert [s for s, _ in JournalSummary(fresh.run_dir).metrics["loss"]] == [50, 51, 52]
    _train(tmp_path / "b", 10)
    later, _ = _train(tmp_path / "b", 2, resume=True, resume_step=20)
    summary = JournalSummary(later.run_dir)
    assert [s for s, _ in summary.metrics["loss"]] == [*range(10), 20, 21] and "rewind" not in summary.counts
    with pytest.raises(ValueError, match="step must be between"):
        Dispatcher(log_with="jsonl", logging_dir=tmp_path, resume=True, resume_step=-1)


def test_a_lagging_backend_catches_up_to_the_rewind_point_only(tmp_path, monkeypatch):
    """Killed while the file store had stored step 5 and the journal all 150: the catch-up delivers the
    journal's steps up to the checkpoint, never the superseded ones after it."""
    _killed_with_records_left_in_the_journal(tmp_path, monkeypatch, 150)
    run = Dispatcher(log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True, resume_step=100)
    run.init_trackers("proj")
    for step in range(100, 200):
        run.log({"loss": float(step)}, step=step)
    report = run.finish()
    assert report.ok
    history = run.get_tracker("file-store").read_back_history()
    assert [step for step, _ in history["loss"]] == list(range(200))
    assert history[MARKER_KEY] == [(100, 100)]
    assert report.backends["file-store"].delivered == 100 + (100 - 6)  # this process's, and steps 6..99


def test_current_entries_drop_what_a_rewind_superseded():
    entries = [
        {"type": "metrics", "step": 5, "seq": 5},
        {"type": "metrics", "step": 6, "seq": 6},
        {"type": "rewind", "step": 6, "last_seq": 6},
        {"type": "metrics", "step": 6, "seq": 7},
    ]
    assert current_entries(entries) == [entries[0], entries[3]]
    assert RewindPoint.from_json({"step": "6"}) is None
