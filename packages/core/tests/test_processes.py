"""Whole-process behaviour: ranks, import cost, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

RANK_SCRIPT = textwrap.dedent(
    """
    import sys, tracking_core
    run = tracking_core.init("ranked", log_with="jsonl", logging_dir=sys.argv[1], config={"lr": 1})
    for step in range(10):
        run.log({"loss": float(step)}, step=step)
    tracker = run.get_tracker("jsonl")
    if run.rank > 0:  # no-op objects with the full interface, never AttributeError
        tracker.tracker.anything(1, 2)
        run.get_tracker("jsonl", unwrap=True).whatever["x"] = 1
        tracker.log_table("t", data=[[1]])
    run.log_table("t", columns=["a"], data=[[1]])
    report = run.finish()
    print(type(tracker).__name__, report.ok, len(report.backends), run.run_id, run.run_dir.is_dir())
    """
)


def _python(script: str, *args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def test_two_ranks_produce_one_run(tmp_path):
    """Both ranks at once, as a launcher starts them: rank 1 runs no tracker and sees rank 0's run."""
    ranks = [
        subprocess.Popen(
            [sys.executable, "-c", RANK_SCRIPT, str(tmp_path)],
            env={**os.environ, "RANK": rank, "WORLD_SIZE": "2", "MASTER_PORT": "29551"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in ("0", "1")
    ]
    outputs = []
    for process in ranks:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        outputs.append(out.split())
    runs = [path for path in (tmp_path / "ranked").iterdir() if not path.name.startswith(".")]
    assert len(runs) == 1
    assert outputs[0] == ["JsonlTracker", "True", "1", runs[0].name, "True"]
    assert outputs[1] == ["NoOpTracker", "True", "0", runs[0].name, "True"]


def test_import_pulls_no_third_party_module():
    script = textwrap.dedent(
        """
        import sys
        before = set(sys.modules)
        import tracking_core
        run = tracking_core.Dispatcher  # loads the dispatcher machinery too
        new = {m.split(".")[0] for m in set(sys.modules) - before}
        print(sorted(m for m in new if m not in sys.stdlib_module_names and m != "tracking_core"))
        """
    )
    result = _python(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_starting_a_run_on_a_built_in_backend_reads_no_package_metadata(tmp_path):
    # Scanning every installed distribution's entry points, and the network modules only online
    # backends use, cost ~50 ms of each run's start-up; a built-in name needs neither. (The run context's
    # package list reads that metadata on a thread of its own: this run takes none, to see the lookup alone.)
    script = textwrap.dedent(
        """
        import sys
        import tracking_core
        run = tracking_core.Dispatcher(log_with="jsonl", logging_dir=sys.argv[1], context=False)
        run.init_trackers("quick")
        run.log({"loss": 1.0})
        run.finish()
        print(sorted(m for m in ("importlib.metadata", "urllib.request", "ssl") if m in sys.modules))
        """
    )
    result = _python(script, str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_listing_backends_imports_no_backend_module():
    script = (
        "import sys, tracking_core; names = tracking_core.get_available_trackers(); "
        "print([m for m in sys.modules if m.startswith('tracking_') and m != 'tracking_core' and not m.startswith('tracking_core.')])"
    )
    result = _python(script)
    assert result.stdout.strip() == "[]", result.stderr


def _cli(*args: str, cwd: Path, without_numpy: bool = False) -> subprocess.CompletedProcess:
    if without_numpy:  # core must work on a machine with nothing but Python
        code = (
            "import sys; sys.modules['numpy'] = None; from tracking_core.cli import main; sys.exit(main(sys.argv[1:]))"
        )
        command = [sys.executable, "-c", code, *args]
    else:
        command = [sys.executable, "-m", "tracking_core", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=300)


def test_cli_demo_show_replay_list(tmp_path):
    result = _cli(
        "demo",
        "--steps",
        "60",
        "--backends",
        "jsonl",
        "--logging-dir",
        str(tmp_path / "runs"),
        cwd=tmp_path,
        without_numpy=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "accuracy" in result.stdout and "jsonl    finished" in result.stdout
    assert "tracking:" not in result.stdout  # notices go to stderr
    (run_dir,) = (tmp_path / "runs" / "demo").iterdir()

    shown = _cli("show", str(run_dir), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "train/loss" in shown.stdout and " 60 " in shown.stdout and "finished" in shown.stdout

    replayed = _cli(
        "replay", str(run_dir), "--to", "jsonl", "--logging-dir", str(tmp_path / "copy"), "--quiet", cwd=tmp_path
    )
    assert replayed.returncode == 0, replayed.stderr
    (copy_dir,) = (tmp_path / "copy" / "demo").iterdir()
    original = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    copied = [json.loads(line) for line in (copy_dir / "journal.jsonl").read_text().splitlines()]
    assert [r for r in original if r["type"] == "metrics"] == [r for r in copied if r["type"] == "metrics"]

    listed = _cli("list", cwd=tmp_path)
    assert listed.returncode == 0 and "jsonl" in listed.stdout and "tracking-core" in listed.stdout

    missing = _cli("show", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_demo_learns():
    pytest.importorskip("numpy")
    from tracking_core.cli.demo import evaluate, make_data

    data = make_data(200)
    assert evaluate([1.5, -2.0, 0.5], data)[1] > 0.8 > evaluate([0.0, 0.0, 0.0], data)[1]
