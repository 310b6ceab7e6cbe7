"""End to end through the public API against whatever backend this cell installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import tracking_core

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("delivery", ["thread", "process"])
def test_run_with_the_cell_backend_and_the_journal(tmp_path, delivery):
    config = {"lr": 3e-4, "optimizer": {"name": "adamw", "betas": [0.9, 0.95]}, "note": None}
    with tracking_core.init(
        "shared", log_with=[CELL, "jsonl"], logging_dir=tmp_path / "runs", config=config, delivery=delivery
    ) as run:
        for step in range(50):
            run.log({"train/loss": 1.0 / (step + 1), "lr": 3e-4}, step=step)
        run.log_config({"late": True})
    report = run.finish()
    assert report.ok, str(report)
    for name in {CELL, "jsonl"}:
        assert report.backends[name].delivered >= 50
    if delivery == "process":  # the backends ran in the delivery process: its cursors and run.json say so
        import json

        progress = json.loads((run.run_dir / "run.json").read_text())["progress"]
        assert progress[CELL]["step"] == 49 and progress["jsonl"]["step"] == 49


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


def test_a_journal_replays_into_the_cell_backend(tmp_path):
    from tracking_core.cli.replay import journal_config, replay_into

    with tracking_core.init(
        "offline-first", log_with="jsonl", logging_dir=tmp_path / "src", config={"lr": 0.1}
    ) as source:
        for step in range(30):
            source.log({"train/loss": 1.0 / (step + 1)}, step=step)
    run = tracking_core.Dispatcher(log_with=CELL, logging_dir=tmp_path / "dst")
    run.init_trackers("offline-first", config=journal_config(source.run_dir))
    assert replay_into(run, source.run_dir, progress=False) == 30
    report = run.finish()
    assert report.ok, str(report)
    stored = run.trackers[0].read_back_metrics()
    assert sorted(stored["train/loss"]) == list(range(30))
    assert abs(stored["train/loss"][29] - 1 / 30) < 1e-6


def test_a_failing_neighbour_does_not_disturb_the_cell_backend(tmp_path):
    class Broken(tracking_core.GeneralTracker):
        name = "broken"
        requires_logging_directory = False

        def __init__(self, *args, **kwargs):
            super().__init__()

        @property
        def tracker(self):
            return None

        def log(self, values, step=None, **kwargs):
            raise ConnectionResetError("peer went away")

        log_batch = log

    tracking_core.register_tracker_class(Broken)
    try:
        run = tracking_core.init("neighbours", log_with=[CELL, "broken"], logging_dir=tmp_path / "runs")
        for step in range(40):
            run.log({"train/loss": float(step)}, step=step)
            if step % 8 == 7:
                run.flush()
        report = run.finish()
    finally:
        from tracking_core.contract import registry

        registry.unregister_tracker_class("broken")
    assert report.backends[CELL].ok and report.failed == ["broken"]
    assert report.backends["broken"].spilled == 40
    assert sorted(run.get_tracker(CELL).read_back_metrics()["train/loss"]) == list(range(40))


RESUMED_RUN = """
import json, sys
import tracking_core
resume = sys.argv[2] == "resume"
run = tracking_core.init("restarted", log_with=[sys.argv[1]], logging_dir="runs", resume=resume)
for _ in range(10):
    run.log({"train/loss": 0.5})
report = run.finish()
tracker = run.trackers[0]
try:
    points = sorted(tracker.read_back_metrics().get("train/loss", {}))
except NotImplementedError:
    points = None
print(json.dumps({"ok": report.ok, "run_id": run.run_id, "notes": report.backends[sys.argv[1]].notes,
                  "points": points}))
"""


def test_a_restarted_job_continues_its_run_in_the_cell_backend(tmp_path):
    """Two processes, the second with ``resume=True``: one run with both halves where the backend can
    reopen its run, else a new backend run and a note saying so; steps carry on either way."""

    def process(mode: str) -> dict:
        result = subprocess.run(
            [sys.executable, "-c", RESUMED_RUN, CELL, mode], capture_output=True, text=True, timeout=300, cwd=tmp_path
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    first, second = process("new"), process("resume")
    assert first["ok"] and second["ok"] and second["run_id"] == first["run_id"]
    manifest = json.loads((tmp_path / "runs" / "restarted" / first["run_id"] / "run.json").read_text())
    assert manifest["last_step"] == 19
    if manifest["backends"][CELL] is not None:
        assert not [note for note in second["notes"] if "resume" in note], second["notes"]
        if second["points"] is not None:
            assert second["points"] == list(range(20)), "the resumed backend run lacks the first process's points"
    else:
        assert any("not resumed" in note for note in second["notes"]), second["notes"]
        if second["points"] is not None:
            assert second["points"] == list(range(10, 20))


RANKED = """
import sys, tracking_core
run = tracking_core.init("ranked", log_with=[sys.argv[1]], logging_dir="runs", config={"lr": 0.1})
for step in range(5):
    run.log({"train/loss": float(step)}, step=step)
tracker = run.get_tracker(sys.argv[1])
if run.rank:
    tracker.log({"direct": 1.0}, step=0)  # the no-op stand-in takes any call
print(run.rank, len(run.trackers), type(tracker).__name__, run.finish().ok, run.run_id, run.run_dir.is_dir())
"""


@pytest.mark.parametrize("world", [2, 4])
def test_one_run_per_job_only_rank_zero_runs_the_backend(tmp_path, world):
    """Launchers set RANK/WORLD_SIZE (torchrun), SLURM_PROCID (srun), OMPI_COMM_WORLD_RANK (mpirun)."""
    variables = ["RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"]
    clean = {key: value for key, value in os.environ.items() if key not in (*variables, "TRACKING_RUN_ID")}
    job = {"WORLD_SIZE": str(world), "MASTER_PORT": str(29560 + world)}  # what identifies this launch
    processes = [  # every rank at once, as a launcher starts them
        subprocess.Popen(
            [sys.executable, "-c", RANKED, CELL],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**clean, **job, variables[rank % len(variables)]: str(rank)},
        )
        for rank in range(world)
    ]
    lines = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        lines.append(out.strip().splitlines()[-1].split())  # SDKs print too
    runs = [path.name for path in (tmp_path / "runs" / "ranked").iterdir() if not path.name.startswith(".")]
    assert len(runs) == 1, runs  # the other ranks opened no run of their own
    assert lines[0][:2] == ["0", "1"] and lines[0][4:] == [runs[0], "True"], lines[0]
    for rank in range(1, world):  # no backend, and rank 0's run id and folder
        assert lines[rank] == [str(rank), "0", "NoOpTracker", "True", runs[0], "True"], lines[rank]
