"""A journal written in segments (``init_kwargs={"jsonl": {"segment_mb": ...}}``): each segment is deleted, with
its media, once every backend of the run holds its records; until then readers, resume and replay read the
segments and the journal as one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tracking_core
from tracking_core.cli.replay import replay
from tracking_core.contract.registry import register_tracker_class
from tracking_core.store.journal import JOURNAL_NAME, JournalSummary, JournalWriter, read_journal, segment_name
from tracking_core.store.owed import owed_records
from tracking_core.testing import MemoryTracker

TINY = {"jsonl": {"segment_mb": 0.002}}  # 2 KiB: a segment every ~30 steps below


def _steps(journal) -> list[int]:
    return [record["step"] for record in read_journal(journal) if record["type"] == "metrics"]


def test_the_journal_is_kept_whole_by_default(memory, tmp_path):
    run = tracking_core.init("p", log_with=["memory"], logging_dir=tmp_path)
    for step in range(300):
        run.log({"train/loss": 1.0 / (step + 1)}, step=step)
    assert run.finish().ok
    assert sorted(path.name for path in run.run_dir.glob("journal*")) == [JOURNAL_NAME]
    assert _steps(run.run_dir) == list(range(300))


@pytest.mark.parametrize("delivery", ["thread", "process"])
def test_segments_every_backend_holds_are_dropped_with_their_media(memory, tmp_path, delivery):
    run = tracking_core.init(
        "p",
        log_with=["memory"],
        logging_dir=tmp_path,
        config={"lr": 0.1},
        init_kwargs=TINY,
        flush_interval=0.05,
        delivery=delivery,
    )
    run.log_images({"sample": np.zeros((4, 4, 3), dtype=np.uint8)}, step=0)
    for step in range(300):
        run.log({"train/loss": 1.0 / (step + 1)}, step=step)
        time.sleep(0.002)  # the journal's worker writes a few records a batch: a segment seals every ~30 steps
    report = run.finish()
    assert report.ok, str(report)
    assert report.backends["memory"].delivered == 302  # the config, the image and every step

    summary = JournalSummary(run.run_dir)
    assert summary.header.get("after_seq", -1) > 0  # older segments are gone ...
    assert summary.config == {"lr": 0.1}  # ... and the config they held is still the run's
    kept = _steps(run.run_dir)
    assert kept == list(range(300 - len(kept), 300)) and len(kept) < 300  # the tail, in order, once each
    assert summary.finished
    shown = subprocess.run(
        [sys.executable, "-m", "tracking_core", "show", str(run.run_dir)], capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0 and "dropped  the journal's segments up to record" in shown.stdout, shown.stderr
    assert not list((run.run_dir / "media").rglob("*.png"))  # the image's segment went, and its file with it


SLOW_START = """
import os, sys, time
import tracking_core
from tracking_core.contract.registry import register_tracker_class
from tracking_core.store.owed import owed_records
from tracking_core.testing import MemoryTracker

class Slow(MemoryTracker):
    name = "slow"
    def start(self):
        time.sleep(600)  # still starting when the process ends: it holds nothing

register_tracker_class(Slow)
run = tracking_core.init("p", log_with=["slow"], logging_dir=sys.argv[1], config={"lr": 0.1},
                         init_kwargs={"jsonl": {"segment_mb": 0.002}})
print(run.run_dir, flush=True)
for step in range(300):
    run.log({"train/loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.005)  # the journal's worker writes a few records a batch: a segment seals every ~30 steps
time.sleep(2)  # the journal's batches reach the disk
os._exit(0)
"""


def test_a_backend_that_holds_nothing_keeps_every_segment_and_replay_delivers_them_all(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SLOW_START), str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    (run_dir,) = [path.parent for path in tmp_path.glob(f"p/*/{JOURNAL_NAME}")]
    assert len(list(run_dir.glob("journal-*.jsonl"))) >= 5  # sealed, none dropped: the backend holds none
    assert _steps(run_dir) == list(range(300))
    assert owed_records(run_dir) == {"slow": 301}  # the config and every step: what tracking runs lists as owed

    class Slow(MemoryTracker):
        name = "slow"  # starts at once this time

    register_tracker_class(Slow)
    report = replay(run_dir, to="slow", progress=False)
    assert report.ok, str(report)
    assert [step for step, _ in MemoryTracker.runs[-1].metrics] == list(range(300))  # from the first segment on


def test_a_journal_sealed_just_now_still_says_how_far_the_run_got(tmp_path):
    journal = tmp_path / JOURNAL_NAME
    writer = JournalWriter(journal, project="p", run_id="r", source="jsonl", segment_bytes=64)
    writer.write_many([{"type": "metrics", "step": step, "values": {"x": step}, "seq": step} for step in range(5)])
    writer.flush()  # past 64 bytes: sealed, and journal.jsonl holds only the header
    (tmp_path / "run.json").write_text('{"format": "tracking-run", "version": 2, "log_with": ["slow"]}')
    assert [path.name for path in tmp_path.glob("journal-*.jsonl")] == [segment_name(4)]
    assert owed_records(tmp_path) == {"slow": 5}
    writer.close()


def test_a_seal_cut_short_by_a_kill_is_finished_when_the_journal_reopens(tmp_path):
    journal = tmp_path / JOURNAL_NAME
    writer = JournalWriter(journal, project="p", run_id="r", source="jsonl", segment_bytes=1 << 20)
    writer.write_many([{"type": "metrics", "step": step, "values": {"x": step}, "seq": step} for step in range(5)])
    writer.close()
    # killed between linking the sealed segment and moving the next journal into place
    (tmp_path / segment_name(4)).hardlink_to(journal)
    (tmp_path / f"{JOURNAL_NAME}.next").write_text('{"type":"header","format":"tracking-journal","version":1,'
                                                  '"after_seq":4,"config":{}}\n')  # fmt: skip
    JournalWriter(journal, project="p", run_id="r", source="jsonl", segment_bytes=1 << 20).close()
    assert _steps(journal) == [0, 1, 2, 3, 4]  # once each, from the sealed segment


@pytest.mark.parametrize("size", [0, -1, "64"])
def test_a_segment_size_that_is_not_a_positive_number_is_refused(size):
    from tracking_core.backends.jsonl import JsonlTracker

    with pytest.raises(ValueError, match="segment_mb"):
        JsonlTracker("p", segment_mb=size)


def test_a_file_system_without_hard_links_keeps_the_journal_whole(tmp_path, monkeypatch, caplog):
    def no_links(*args):
        raise OSError("hard links not supported")

    monkeypatch.setattr("os.link", no_links)
    journal = tmp_path / JOURNAL_NAME
    writer = JournalWriter(journal, project="p", run_id="r", source="jsonl", segment_bytes=64)
    writer.write_many([{"type": "metrics", "step": step, "values": {"x": step}, "seq": step} for step in range(5)])
    writer.flush()  # stored; the seal fails, which is not the records' failure
    writer.write({"type": "metrics", "step": 5, "values": {"x": 5}, "seq": 5})
    writer.close()
    assert _steps(journal) == [0, 1, 2, 3, 4, 5]
    assert not list(tmp_path.glob("journal*.next")) and "cannot seal" in caplog.text
