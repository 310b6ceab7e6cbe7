"""Every test's HOME (``<tmp_path>/home``) exists: SwanLab before 0.8 keeps ``~/.swanlab`` there and refuses
to start when the home folder itself is missing. :func:`isolate` is what each test file's ``isolated``
fixture does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, cwd: Path | None = None, root: bool = True) -> Path:
    """CWD (``cwd``, default ``tmp_path``), HOME and, with ``root``, SwanLab's root inside the test folder; no
    SwanLab variables from the outside. Returns ``tmp_path``."""
    for name in list(os.environ):
        if name.startswith("SWANLAB_"):
            monkeypatch.delenv(name)
    cwd = cwd or tmp_path
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if root:
        monkeypatch.setenv("SWANLAB_ROOT", str(tmp_path / "home" / ".swanlab"))
    return tmp_path


@pytest.fixture(autouse=True)
def _home_folder(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir(exist_ok=True)
