"""Every run writes its journal, whatever ``log_with`` says: a run logged to the cell's backend alone can be
shown, exported and compared from its folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tracking_core

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"


def _tracking(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracking_core", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_a_run_logged_to_the_cell_backend_alone_is_shown_exported_and_compared(tmp_path):
    runs = []
    for scale in (1.0, 2.0):
        run = tracking_core.init("alone", log_with=[CELL], logging_dir=tmp_path / "runs", config={"scale": scale})
        for step in range(5):
            run.log({"loss": scale / (step + 1)}, step=step)
        report = run.finish(timeout=120)
        assert report.ok and list(report.backends) == [CELL], str(report)
        runs.append(str(run.run_dir))
    shown = _tracking("show", runs[0], cwd=tmp_path)
    assert shown.returncode == 0 and "loss" in shown.stdout, shown.stderr
    out = tmp_path / "out.json"
    exported = _tracking("export", runs[0], "--format", "json", "-o", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert [row["step"] for row in json.loads(out.read_text())["rows"]] == [0, 1, 2, 3, 4]
    compared = _tracking("compare", *runs, "--json", cwd=tmp_path)
    assert compared.returncode == 0 and "loss" in compared.stdout, compared.stderr
