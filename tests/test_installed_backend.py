"""End to end through the public API against whatever backend this cell installed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import tracking_core

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_run_with_the_cell_backend_and_the_journal(tmp_path):
    config = {"lr": 3e-4, "optimizer": {"name": "adamw", "betas": [0.9, 0.95]}, "note": None}
    with tracking_core.init("shared", log_with=[CELL, "jsonl"], logging_dir=tmp_path / "runs", config=config) as run:
        for step in range(50):
            run.log({"train/loss": 1.0 / (step + 1), "lr": 3e-4}, step=step)
    report = run.finish()
    assert report.ok, str(report)
    for name in {CELL, "jsonl"}:
        assert report.backends[name].delivered >= 50


def test_cli_lists_the_cell_backend():
    result = subprocess.run(
        [sys.executable, "-m", "tracking_core", "list"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith(CELL + " "))
    assert "missing" not in row, row


def test_demo_on_the_cell_backend(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracking_core",
            "demo",
            "--steps",
            "40",
            "--backends",
            f"jsonl,{CELL}" if CELL != "jsonl" else "jsonl",
            "--logging-dir",
            str(tmp_path / "runs"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{CELL}" in result.stdout and "finished" in result.stdout
