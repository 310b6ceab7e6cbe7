"""A flush that returned means every point logged before it survives a SIGKILL of the process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tracking_core.notices import reset_warnings
from tracking_core.testing.resume import loss, state_of_a_killed_run
from tracking_swanlab import SwanLabTracker
from tracking_swanlab.reader import read_run


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("SWANLAB_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SWANLAB_ROOT", str(tmp_path / "home" / ".swanlab"))
    reset_warnings()
    return tmp_path


def test_every_step_flushed_before_a_sigkill_is_in_the_run_file(tmp_path: Path) -> None:
    """SwanLab's ``run.log`` only queues; its writer thread batches and its run file is buffered. The child
    logs 100 steps, flushes, and kills itself at once: every step must be read back from its folder."""
    steps = 100
    state = state_of_a_killed_run(SwanLabTracker, tmp_path / "logs", cwd=tmp_path, steps=steps)

    stored = read_run(Path(state["run_dirs"][0])).scalars.get("loss", {})

    missing = sorted(set(range(steps)) - stored.keys())
    assert not missing, f"{len(missing)} of {steps} flushed steps lost: {missing[:10]}..."
    assert stored == {step: loss(step) for step in range(steps)}
