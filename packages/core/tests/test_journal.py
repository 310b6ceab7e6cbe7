"""The journal format: versioned, append-only, readable after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from tracking_core.store.journal import FORMAT_VERSION, JournalSummary, JournalWriter, read_header, read_journal


def test_header_and_records(tmp_path):
    writer = JournalWriter(tmp_path / "j.jsonl", project="p", run_id="r", source="jsonl")
    writer.write({"type": "metrics", "step": 0, "values": {"a": float("nan")}})
    writer.close()
    header = read_header(tmp_path / "j.jsonl")
    assert header["format"] == "tracking-journal" and header["version"] == FORMAT_VERSION
    records = list(read_journal(tmp_path / "j.jsonl"))
    assert records[1]["values"]["a"] != records[1]["values"]["a"]  # NaN round-trips


def test_torn_last_line_and_unknown_types_are_skipped(tmp_path):
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path, project="p", run_id="r", source="jsonl")
    writer.write({"type": "metrics", "step": 0, "values": {"a": 1}})
    writer.write({"type": "from_the_future", "x": 1})
    writer.close()
    with open(path, "a") as handle:
        handle.write('{"type": "metrics", "step": 1, "val')  # killed mid-write
    summary = JournalSummary(path)
    assert summary.metrics == {"a": [(0, 1)]}


def test_newer_format_is_refused_clearly(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"type": "header", "format": "tracking-journal", "version": FORMAT_VERSION + 1}) + "\n")
    with pytest.raises(ValueError, match="reads up to"):
        read_header(path)


def test_journal_of_a_sigkilled_process_reads_back(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys, time, tracking_core
        run = tracking_core.init("killed", log_with="jsonl", logging_dir={str(tmp_path)!r})
        step = 0
        while True:
            run.log({{"loss": 1.0 / (step + 1)}}, step=step)
            if step == 200:
                run.flush()
                print(run.run_dir, flush=True)
            step += 1
            time.sleep(0.0005)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    run_dir = process.stdout.readline().strip()
    time.sleep(0.3)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    summary = JournalSummary(run_dir)
    steps = [step for step, _ in summary.metrics["loss"]]
    assert not summary.finished
    assert len(steps) >= 201 and steps == list(range(len(steps)))  # a gap-free prefix
