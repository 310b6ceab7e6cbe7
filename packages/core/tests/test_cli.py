"""The ``tracking`` command as a user runs it: ``python -m tracking_core ...`` in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tracking_core
from tracking_core.__about__ import __version__
from tracking_core.store.journal import read_journal

from .helpers import FailingTracker


def tracking(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracking_core", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


COMMANDS = ["list", "runs", "show", "demo", "replay"]


def test_bare_command_prints_help_and_succeeds(tmp_path):
    result = tracking(cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: tracking")
    for command in COMMANDS:
        assert f"\n    {command} " in result.stdout, command


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag, tmp_path):
    result = tracking(flag, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"tracking (tracking-core) {__version__}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_of_every_command_has_help(command, tmp_path):
    from tracking_core.cli import build_parser

    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    parser = subparsers.choices[command]
    assert parser.description, command
    for action in parser._actions:
        assert action.help, f"tracking {command} {action.option_strings or action.dest} has no help"
    result = tracking(command, "--help", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith(f"usage: tracking {command}")


def test_no_help_text_shows_an_escaped_percent_sign():
    """argparse formats argument help with ``%``, but a description only when it names ``%(prog)``."""
    from tracking_core.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    for name, command in [("tracking", parser), *subparsers.choices.items()]:
        assert "%%" not in command.format_help(), name
    assert "80% validation accuracy" in " ".join(subparsers.choices["demo"].format_help().split())


def test_what_the_demo_and_the_commands_it_prints_leave_in_a_clone_is_ignored():
    """``tracking demo`` run at the root of a clone, then the viewers it names (``dvc plots show`` writes
    ``dvc_plots/`` where it runs): none of it shows up as a change to commit."""
    root = Path(__file__).resolve().parents[3]
    if not (root / ".git").exists() or not (root / ".gitignore").is_file():
        pytest.skip("not a clone of the repository")
    left = ["runs/demo/run.json", "mlruns/0/meta.yaml", "mlflow.db", ".aim/run", "wandb/run", "swanlog/run"]
    left.append("dvc_plots/index.html")
    for path in left:
        checked = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=root)
        assert checked.returncode == 0, f"{path} is not in .gitignore"


def test_demo_with_zero_steps_runs(tmp_path):
    result = tracking("demo", "--steps", "0", "--backends", "jsonl", "--logging-dir", "runs", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (run_dir,) = (tmp_path / "runs" / "demo").iterdir()
    records = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    assert [r["type"] for r in records if r["type"] == "table"] == ["table"]
    assert all(r.get("step", 0) >= 0 for r in records)


@pytest.mark.parametrize("value", ["-5", "two", "1.5"])
def test_demo_refuses_a_bad_step_count(value, tmp_path):
    result = tracking("demo", "--steps", value, "--backends", "jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert "argument --steps" in result.stderr and value in result.stderr
    assert not (tmp_path / "runs").exists()


def _log_run(logging_dir: Path, project: str, scale: float, steps: int = 5, finish: bool = True) -> Path:
    run = tracking_core.init(project, logging_dir=logging_dir, config={"scale": scale})
    for step in range(steps):
        run.log({"train/loss": scale / (step + 1), "note": "text"}, step=step)
    run.log_table("predictions", columns=["input", "label"], data=[[f"x{i}", i % 2] for i in range(8)], step=steps - 1)
    numpy = pytest.importorskip("numpy")
    run.log_images({"sample": numpy.full((8, 8, 3), int(40 * scale), dtype="uint8")}, step=steps - 1)
    if finish:
        run.finish()
    else:
        run.flush()
    return run.run_dir


def test_runs_lists_every_run_with_steps_status_and_backends(tmp_path):
    first = _log_run(tmp_path / "runs", "alpha", 1.0, steps=5)
    second = _log_run(tmp_path / "runs", "beta", 2.0, steps=3)
    manifest = json.loads((second / "run.json").read_text())
    manifest["owed"] = {"mlflow": 2}  # what a backend that ended without two records leaves in run.json
    (second / "run.json").write_text(json.dumps(manifest))

    result = tracking("runs", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["project", "run", "started", "steps", "status", "backends"]
    alpha = next(line for line in lines if first.name in line)
    beta = next(line for line in lines if second.name in line)
    assert alpha.split()[0] == "alpha" and " 5 " in alpha and "finished" in alpha and "jsonl (resumable)" in alpha
    assert " 3 " in beta and "mlflow (not started, 2 owed)" in beta

    only_beta = tracking("runs", "runs", "--project", "beta", cwd=tmp_path)
    assert first.name not in only_beta.stdout and second.name in only_beta.stdout


def test_runs_does_not_import_backend_sdks(tmp_path):
    _log_run(tmp_path / "runs", "alpha", 1.0)
    script = (
        "import sys; from tracking_core.cli import main; main(['runs', 'runs']); "
        "print('imported:', sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'mlflow', 'wandb', 'aim', 'tensorboard', 'comet_ml', 'clearml', 'swanlab', 'trackio', 'dvclive', 'dvc'}))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert "imported: []" in result.stdout, result.stdout + result.stderr


def test_runs_on_an_empty_or_missing_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    empty = tracking("runs", "empty", cwd=tmp_path)
    assert empty.returncode == 0 and "no runs under empty" in empty.stdout
    missing = tracking("runs", "nowhere", cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere is not a directory" in missing.stderr


def test_show_previews_tables_and_images(tmp_path):
    run_dir = _log_run(tmp_path / "runs", "alpha", 1.0)
    result = tracking("show", str(run_dir), "--rows", "3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "table 'predictions' at step 4: 8 rows x 2 columns" in out
    assert "x0" in out and "x2" in out and "x3" not in out and "... 5 more rows" in out
    assert "images (1)" in out and "media/images/sample-4-0.png" in out


def test_show_several_runs_overlays_them_in_one_plot(tmp_path):
    pytest.importorskip("matplotlib")
    first = _log_run(tmp_path / "runs", "alpha", 1.0)
    second = _log_run(tmp_path / "runs", "alpha", 3.0, finish=False)
    result = tracking("show", str(first), str(second), "--plot", "out/compare.png", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("journal  ") == 2
    assert "not finished" in result.stdout
    assert "plot written to out/compare.png" in result.stdout
    png = (tmp_path / "out" / "compare.png").read_bytes()
    assert png.startswith(b"\x89PNG")

    import matplotlib.image

    pixels = matplotlib.image.imread(tmp_path / "out" / "compare.png")
    assert pixels.shape[0] > 300  # a metric panel and a row of thumbnails


BLOCK_MATPLOTLIB = """
import sys
sys.modules["matplotlib"] = None  # import matplotlib now raises ImportError, as where it is not installed
from tracking_core.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_show_plot_without_matplotlib_says_so_and_fails(tmp_path):
    run_dir = _log_run(tmp_path / "runs", "alpha", 1.0)
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_MATPLOTLIB, "show", str(run_dir), "--plot", "out.png"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train/loss" in result.stdout  # the summary is still printed
    assert "no plot written to out.png: matplotlib is not installed (pip install matplotlib)" in result.stderr
    assert not (tmp_path / "out.png").exists()


def test_show_a_missing_run_is_a_clear_error(tmp_path):
    result = tracking("show", "nope", cwd=tmp_path)
    assert result.returncode == 2 and "does not exist" in result.stderr and "Traceback" not in result.stderr


def test_the_core_readme_quickstart_runs_and_its_run_is_listed(tmp_path):
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", quickstart, re.DOTALL).group(1)
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert ran.returncode == 0, ran.stderr
    listed = tracking("runs", cwd=tmp_path)
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith("my-project")]
    assert " 100 " in row and "finished" in row
    (run_dir,) = (tmp_path / "runs" / "my-project").iterdir()
    shown = tracking("show", str(run_dir), cwd=tmp_path)
    assert "table 'predictions'" in shown.stdout and "train/loss" in shown.stdout


RUN_THEN = """
import os, signal, sys, time
import tracking_core
run = tracking_core.init(sys.argv[1], logging_dir="runs")
run.log({"loss": 1.0}, step=0)
run.flush()
how = sys.argv[1]
if how == "crashed":
    raise RuntimeError("the training loop broke")
if how == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
if how == "running":
    print("ready", flush=True)
    time.sleep(60)
if how == "crashed_in_with":
    with run:
        raise KeyError("inside the with block")
run.finish()
"""


def test_runs_tells_finished_crashed_killed_and_running_runs_apart(tmp_path):
    for how in ("finished", "crashed", "killed", "crashed_in_with"):
        subprocess.run([sys.executable, "-c", RUN_THEN, how], cwd=tmp_path, capture_output=True, timeout=120)
    alive = subprocess.Popen(
        [sys.executable, "-c", RUN_THEN, "running"], cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    try:
        assert alive.stdout.readline().strip() == "ready"
        listing = tracking("runs", cwd=tmp_path)
    finally:
        alive.kill()
        alive.wait()
    statuses = {line.split()[0]: line for line in listing.stdout.splitlines()[2:]}
    assert "finished" in statuses["finished"]
    assert "crashed: RuntimeError" in statuses["crashed"]
    assert "crashed: KeyError" in statuses["crashed_in_with"]
    assert " killed " in statuses["killed"] + " "
    assert " running " in statuses["running"] + " "
    after = tracking("runs", cwd=tmp_path)
    assert " killed " in next(line for line in after.stdout.splitlines() if line.startswith("running")) + " "


def test_a_replayed_copy_keeps_the_original_start_time_and_counts_what_its_report_counts(tmp_path, monkeypatch):
    import time

    # the run folder's own records as users get them (context captured, samples kept): the copy carries the
    # original's, and adds none of the replay's
    run = tracking_core.init("alpha", logging_dir=tmp_path / "runs", config={"lr": 0.1})
    for step in range(3):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    run.finish()
    time.sleep(1.1)
    copy = tracking("replay", str(run.run_dir), "--to", "jsonl", "--new-run", cwd=tmp_path)
    assert copy.returncode == 0, copy.stderr
    delivered = copy.stdout.splitlines()[2].split()[2]  # the report's delivered column
    assert f"{delivered}/{delivered} records delivered" in copy.stderr, copy.stderr
    original, replayed = (
        list(read_journal(path))
        for path in sorted(
            (tmp_path / "runs" / "alpha").glob("*/journal.jsonl"), key=lambda p: p.parent != Path(run.run_dir)
        )
    )
    metrics = [[entry["values"] for entry in journal if entry["type"] == "metrics"] for journal in (original, replayed)]
    assert metrics[1] == metrics[0], "the replay added samples of its own"
    assert not any(key.startswith("system/") for values in metrics[0] for key in values), "samples are not the user's"
    assert not any("run_context" in entry.get("values", {}) for entry in original + replayed)
    copy_dir = next(p for p in (tmp_path / "runs" / "alpha").iterdir() if p.is_dir() and p != Path(run.run_dir))
    manifests = [json.loads((folder / "run.json").read_text()) for folder in (Path(run.run_dir), copy_dir)]
    assert manifests[0]["context"] is not None and manifests[1]["context"] == manifests[0]["context"], (
        "the copy carries the original's run context"
    )
    assert (copy_dir / "system.jsonl").read_text() == (Path(run.run_dir) / "system.jsonl").read_text() != ""
    listing = tracking("runs", cwd=tmp_path).stdout.splitlines()[2:]
    assert len(listing) == 2
    assert len({line.split()[2] + line.split()[3] for line in listing}) == 1, listing  # the same start time

    again = tracking("replay", str(run.run_dir), "--to", "jsonl", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "nothing to deliver" in again.stderr and "0/1" not in again.stderr


def _failed_run(tmp_path, caplog):
    """A run whose one backend fails at every call: the run, its report and the end-of-run warning line."""
    tracking_core.register_tracker_class(FailingTracker)
    try:
        run = tracking_core.init("p", log_with=["failing"], logging_dir=tmp_path / "runs")
        run.log({"loss": 1.0}, step=0)
        with caplog.at_level("WARNING", logger="tracking"):
            report = run.finish(timeout=5)
    finally:
        from tracking_core.contract import registry

        registry.unregister_tracker_class("failing")
    (line,) = [r.getMessage() for r in caplog.records if "not everything was delivered" in r.getMessage()]
    return run, report, line


def test_a_failed_finish_warns_in_one_line_and_leaves_the_table_to_the_report(tmp_path, caplog):
    _, report, line = _failed_run(tmp_path, caplog)
    assert not report.ok
    assert "\n" not in line and "failing (" in line and "spilled" in line


def test_the_end_of_run_line_names_the_report_file_and_the_replay_that_delivers_the_rest(tmp_path, caplog):
    """A caller that holds no report (accelerate's ``end_training()``) learns where it is and what to run."""
    run, report, line = _failed_run(tmp_path, caplog)
    report_file = Path(run.run_dir) / "report.txt"
    assert str(report_file) in line and report_file.read_text() == str(report) + "\n"
    command = f"tracking replay {run.run_dir} --to failing"
    assert command in line, line
    assert "finish() returns" not in line


def test_the_demo_ends_with_commands_that_run_as_printed(tmp_path):
    folder = tmp_path / "my runs"
    folder.mkdir()
    result = tracking("demo", "--backends", "jsonl", "--steps", "20", "--logging-dir", "logs here", cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    tail = result.stdout[result.stdout.index("\nnext:\n") :].splitlines()[2:]
    commands = [line.split("    # ")[0].strip() for line in tail if "    # " in line]
    assert len(commands) == 3, tail
    assert result.stdout.rstrip().splitlines()[-1].startswith("  jsonl: journal at")  # the hints come last
    for command in commands:
        assert "'logs here/demo/" in command or "'logs here'" in command, command  # quoted for the shell
        ran = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=folder, timeout=300)
        assert ran.returncode == 0, (command, ran.stdout, ran.stderr)
