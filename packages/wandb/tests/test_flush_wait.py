"""``flush()`` waits for wandb-core's next write of the transaction log, not a whole write interval."""

from __future__ import annotations

from pathlib import Path

import pytest
from tracking_wandb import flush_wait
from tracking_wandb.flush_wait import wait_for_next_write


def test_a_write_after_the_handoff_ends_the_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    log = tmp_path / "run.wandb"
    log.write_bytes(b"x" * 10)
    reads = []
    size = flush_wait._size

    def size_then_write(path: Path) -> int:
        reads.append(path)
        if len(reads) == 3:  # wandb-core's periodic write, after the size was first read
            with open(path, "ab") as file:
                file.write(b"y")
        return size(path)

    monkeypatch.setattr(flush_wait, "_size", size_then_write)
    assert wait_for_next_write(log, after=0.0, longest=60.0)
    assert len(reads) == 3  # it returned at the first read that saw the write, long before 60 s


def test_without_a_write_it_gives_up_after_the_longest_wait(tmp_path: Path):
    log = tmp_path / "run.wandb"
    log.write_bytes(b"x" * 10)
    assert not wait_for_next_write(log, after=0.0, longest=0.05)


def test_a_write_before_the_handoff_does_not_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A write during the handoff may have begun before the records reached wandb-core's writer."""
    log = tmp_path / "run.wandb"
    log.write_bytes(b"x" * 10)
    real_sleep = flush_wait.time.sleep
    slept = []

    def sleep_then_write(seconds: float) -> None:
        if not slept:  # the handoff: wandb-core writes meanwhile
            with open(log, "ab") as file:
                file.write(b"y")
        slept.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(flush_wait.time, "sleep", sleep_then_write)
    assert not wait_for_next_write(log, after=0.01, longest=0.05)
