"""Every test's HOME (``<tmp_path>/home``) exists: SwanLab before 0.8 keeps ``~/.swanlab`` there and refuses
to start when the home folder itself is missing."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _home_folder(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir(exist_ok=True)
