"""Every Trackio test starts without TRACKIO_DIR, in its own folder, and must release its store."""

from __future__ import annotations

from pathlib import Path

import pytest
from tracking_trackio.startup import runs_per_dir as _runs_per_dir


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.delenv("TRACKIO_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    yield
    assert not _runs_per_dir, f"a test left a trackio storage claim behind: {dict(_runs_per_dir)}"
