"""The cell's backend spawns no package manager and writes nothing outside the run's folders.

A run started by this library must not depend on, or pay for, what happens to be installed: SDKs
that run ``pip list``, ``uv pip list``, ``pixi list`` or ``conda env export`` at start-up wait seconds
on them and write into the user's caches. The run here has stand-ins for those tools and for ``git``,
``nvidia-smi`` and ``lscpu`` first on PATH (each records that it was called), a fresh HOME, TMPDIR and
cwd (not a git checkout: the library's own run context runs ``git`` only inside one), and must leave
every package manager uncalled, the other stand-ins too unless the SDK's own capture runs them as the
SDK defaults it (``SDK_OWN_TOOLS``, each in that backend's README), and every file under
``logging_dir`` (or a path the backend's README lists with its reason, in ``ALLOWED_OUTSIDE``).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"

#: Tools an SDK may look for at start-up; none of them may be run on the user's behalf.
PACKAGE_MANAGERS = ("uv", "pixi", "conda", "mamba", "pip", "pip3", "poetry")
STAND_INS = (*PACKAGE_MANAGERS, "git", "nvidia-smi", "lscpu")
#: Tools other than package managers that a backend's SDK runs itself with its defaults, as it does under
#: Accelerate (its README says so): W&B's git capture asks git for the work tree even outside one; SwanLab's
#: snapshot reads git and lscpu.
SDK_OWN_TOOLS: dict[str, set[str]] = {"wandb": {"git"}, "swanlab": {"git", "lscpu"}}

#: Files a backend's SDK writes outside logging_dir whatever it is told, relative to HOME (each is
#: listed, with its reason, in that backend's README).
ALLOWED_OUTSIDE: dict[str, set[str]] = {}
#: This library's own cache of empty stores (store_cache.py, documented in the README): HOME-relative.
DOCUMENTED_CACHE = ".cache/tracking/"


def _old_sdk_caches() -> tuple[str, ...]:
    """HOME-relative folders an older SDK's own import fills (each in that backend's README, "SDK range")."""
    if CELL == "trackio":
        from tracking_trackio.older import before_v0_24

        if before_v0_24.release() and before_v0_24.release() < (0, 24):
            return (".cache/matplotlib/",)  # gradio 5, which trackio < 0.24 imports, imports matplotlib
    return ()


RUN = """
import sys
import numpy as np
import tracking_core
cell = sys.argv[1]
run = tracking_core.init("hermetic", log_with=[cell], logging_dir=sys.argv[2], config={"lr": 0.1, "layers": [2, 3]})
for step in range(20):
    run.log({"train/loss": 1.0 / (step + 1)}, step=step)
run.log_images({"sample": np.zeros((8, 8, 3), dtype=np.uint8)}, step=19)
report = run.finish(timeout=120)
print("state", report.backends[cell].state)
"""


def _stand_ins(folder: Path, calls: Path) -> None:
    folder.mkdir()
    for tool in STAND_INS:
        script = folder / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{calls}"\nexit 1\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


def test_the_backend_runs_no_tool_from_path_and_writes_only_under_logging_dir(tmp_path):
    home, temp, work, logs = tmp_path / "home", tmp_path / "tmp", tmp_path / "work", tmp_path / "logs"
    for folder in (home, temp, work):
        folder.mkdir()
    calls = tmp_path / "calls.log"
    _stand_ins(tmp_path / "bin", calls)
    env = {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "TMPDIR": str(temp),
        "TEMP": str(temp),
        "TMP": str(temp),
    }
    # System metrics and the run context at their defaults (kept in the run folder): outside a git
    # checkout, as this cwd is, capturing what reproduces the run must not run git either.
    for variable in (
        "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "WANDB_SERVICE", "TRACKING_SYSTEM_METRICS",
        "TRACKING_RUN_CONTEXT"
    ):  # fmt: skip
        env.pop(variable, None)
    result = subprocess.run(
        [sys.executable, "-c", RUN, CELL, str(logs)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=work,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "state finished" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]
    called = calls.read_text().splitlines() if calls.exists() else []
    unexpected = [call for call in called if call.split()[0] not in SDK_OWN_TOOLS.get(CELL, set())]
    assert unexpected == [], f"{CELL} ran tools from PATH at start-up: {json.dumps(unexpected)}"
    outside = [
        name
        for name in _files(home)
        if name not in ALLOWED_OUTSIDE.get(CELL, set()) and not name.startswith((DOCUMENTED_CACHE, *_old_sdk_caches()))
    ]
    assert outside == [], f"{CELL} wrote under HOME: {outside}"
    assert _files(work) == [], f"{CELL} wrote into the working directory: {_files(work)}"
    assert _files(logs), "the run wrote nothing under logging_dir"
    (manifest,) = logs.glob("hermetic/*/run.json")
    context = json.loads(manifest.read_text())["context"]  # captured, with the defaults
    assert "platform" in context and "git" not in context
