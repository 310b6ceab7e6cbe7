"""DVCLive-specific behaviour, read back from DVCLive's own files (see ``conftest.py``): the journal's step
is DVCLive's step, no git/DVC/Studio side effects, key and path safety, media, artifacts and resume."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import tracking_core
from tracking_core import TrackingWarning
from tracking_core.notices import reset_warnings
from tracking_core.testing.images import assert_read_back, image_layouts
from tracking_core.testing.resume import finished_run, log_loss, loss, started_tracker, state_of_a_killed_run
from tracking_dvclive import DVCLiveTracker
from tracking_dvclive.names import safe_path


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("DVCLIVE_", "DVC_")):
            monkeypatch.delenv(name)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    reset_warnings()
    return tmp_path


def test_journal_steps_are_dvclives_steps(isolated: Path, dvclive_files):
    run = tracking_core.init("steps", log_with=["jsonl", "dvclive"], logging_dir=isolated / "logs", on_error="raise")
    run.log({"loss": 0.5}, step=3)
    run.log({"loss": 0.25, "acc": 0.9})
    run.log({"loss": 0.125}, step=10)
    tracker = run.get_tracker("dvclive", unwrap=False)
    assert run.finish(timeout=120).ok
    journal = [json.loads(line) for line in (run.run_dir / "journal.jsonl").read_text().splitlines()]
    steps = {(record["step"], key) for record in journal if record.get("type") == "metrics" for key in record["values"]}
    rows = dvclive_files.tsv_rows(tracker.dir)
    assert rows == {"loss": [(3, "0.5"), (4, "0.25"), (10, "0.125")], "acc": [(4, "0.9")]}
    assert steps == {(step, key) for key, points in rows.items() for step, _ in points}
    assert dvclive_files.summary(tracker.dir) == {"loss": 0.125, "acc": 0.9, "step": 10}


def test_direct_use_without_step_counts_on(isolated: Path, dvclive_files):
    tracker = DVCLiveTracker("direct", logging_dir=isolated / "logs")
    tracker.start()
    for value in (1.0, 2.0):
        tracker.log({"auto": value})
    tracker.log({"auto": 10.0}, step=10)
    tracker.log({"auto": 11.0})
    tracker.finish()
    assert tracker.dir == isolated / "logs" / "dvclive"
    assert dvclive_files.scalars(tracker.dir) == {"auto": {0: 1.0, 1: 2.0, 10: 10.0, 11: 11.0}}


def _tree(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*")}


CHILD = r"""
import json, os, subprocess, sys, threading
calls = []
def record(call):
    # the run's own context capture reads git state in its thread (docs/run-context.md): not DVCLive's
    if threading.current_thread().name != "tracking-run-context":
        calls.append(call)
real_popen_init = subprocess.Popen.__init__
def recording_init(self, args, *a, **kw):
    record(args if isinstance(args, str) else [str(arg) for arg in args])
    raise OSError("no subprocess allowed")
subprocess.Popen.__init__ = recording_init
real_spawn = os.posix_spawn
def recording_spawn(path, *a, **kw):
    record([str(path)])
    raise OSError("no subprocess allowed")
os.posix_spawn = os.posix_spawnp = recording_spawn
import numpy as np, tracking_core
run = tracking_core.init("side-effects", log_with="dvclive", logging_dir=sys.argv[1], on_error="raise",
                         config={"lr": 0.1})
run.log({"loss": 0.5, "note": "text"}, step=0)
run.log_images({"picture": np.zeros((4, 6, 3), np.uint8)}, step=0)
open("model.bin", "wb").write(b"weights")
run.log_artifact("model.bin")
report = run.finish(timeout=120)
print(json.dumps({"ok": report.ok, "calls": calls}))
"""


def test_never_runs_git_or_dvc_and_writes_only_under_logging_dir(isolated: Path):
    """In a git work tree (where DVCLive would create a DVC repo and read git) and with DVCLIVE_TEST set
    (where DVCLive would write to a temporary folder), the run starts no process and writes only its folder."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    work = isolated / "work"
    subprocess.run([git, "init", "-q", str(work)], check=True)
    before = _tree(work)
    env = {**os.environ, "DVCLIVE_TEST": "true", "HOME": str(isolated / "home")}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(work / "logs")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result == {"ok": True, "calls": []}, child.stderr[-3000:]
    added = _tree(work) - before - {"model.bin"}
    assert added and all(path == "logs" or path.startswith("logs/") for path in added), sorted(added)
    assert not (work / ".dvc").exists() and not (isolated / "home").exists()
    folder = next((work / "logs").glob("side-effects/*/dvclive"))
    assert (folder / "artifacts" / "model.bin").read_bytes() == b"weights"
    assert not list(folder.glob("*dvc.yaml")), "no dvc.yaml is written"


def test_keys_stay_inside_the_folder_and_never_clash_in_metrics_json(isolated: Path, dvclive_files):
    run = tracking_core.init("keys", log_with="dvclive", logging_dir=isolated / "logs", on_error="raise")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.log({"a": 1.0, "../../escape": 2.0, "/abs//path": 3.0, "c:d": 4.0, "x" * 300: 5.0}, step=0)
        run.log({"a/b": 6.0, "a": 7.0}, step=1)
        tracker = run.get_tracker("dvclive", unwrap=False)
        report = run.finish(timeout=120)
    assert report.ok, report
    assert not (isolated / "escape.tsv").exists() and not list((isolated / "logs").glob("**/../escape.tsv"))
    stored = dvclive_files.scalars(tracker.dir)
    long_name = safe_path("x" * 300)
    assert len(long_name) < 128 and long_name.startswith("xxx")
    assert stored == {
        "a": {0: 1.0, 1: 7.0},
        "__/__/escape": {0: 2.0},
        "abs/path": {0: 3.0},
        "c_d": {0: 4.0},
        long_name: {0: 5.0},
        "a_b": {1: 6.0},
    }
    assert report.backends["dvclive"].key_map["a/b"] == "a_b"
    assert dvclive_files.summary(tracker.dir)["a_b"] == 6.0
    assert any("a_b" in str(w.message) for w in caught if issubclass(w.category, TrackingWarning))


def test_text_values_are_dvclive_metrics(isolated: Path, dvclive_files):
    tracker = started_tracker(DVCLiveTracker, isolated / "logs")
    tracker.log({"note": "first words", "flag": True}, step=2)
    tracker.finish()
    assert dvclive_files.tsv_rows(tracker.dir) == {"note": [(2, "first words")], "flag": [(2, "1")]}
    assert dvclive_files.summary(tracker.dir) == {"note": "first words", "flag": 1, "step": 2}


def test_config_is_params_yaml_and_merges(isolated: Path, dvclive_files):
    tracker = started_tracker(DVCLiveTracker, isolated / "logs")
    tracker.store_init_configuration({"lr": 0.1, "model": {"depth": 2}, "layers": [64, 32], "scheduler": None})
    tracker.store_init_configuration({"model": {"width": 8}})
    tracker.finish()
    assert dvclive_files.params(tracker.dir) == {
        "lr": 0.1,
        "model": {"depth": 2, "width": 8},
        "layers": [64, 32],
        "scheduler": None,
    }


def test_every_image_layout_reads_back_pixel_for_pixel(isolated: Path, dvclive_files):
    pytest.importorskip("PIL")
    images = image_layouts()
    tracker = started_tracker(DVCLiveTracker, isolated / "logs")
    tracker.log_images(images, step=3)
    tracker.log_images({"hwc": images["hwc"]}, step=4)
    tracker.finish()
    files = dvclive_files.image_files(tracker.dir)
    assert files["hwc"] == ["3.png", "4.png"] and files["nchw"] == ["3_0.png", "3_1.png"]
    stored = tracker.read_back_images()
    assert [step for step, _ in stored.pop("hwc")] == [3, 4]
    assert_read_back(stored, {key: value for key, value in images.items() if key != "hwc"}, step=3)


def test_figure_is_a_png_image(isolated: Path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    tracker = started_tracker(DVCLiveTracker, isolated / "logs")
    tracker.log_figure(figure, "curve", step=2)
    tracker.finish()
    [(step, pixels)] = tracker.read_back_images()["curve"]
    assert step == 2 and pixels.shape == (50, 100, 4)


def test_artifacts_are_copied_under_the_folder(isolated: Path):
    source = isolated / "work" / "out"
    (source / "sub").mkdir(parents=True)
    (source / "weights.bin").write_bytes(b"w")
    (source / "sub" / "notes.txt").write_text("n")
    tracker = started_tracker(DVCLiveTracker, isolated / "logs")
    tracker.log_artifact(source / "weights.bin")
    tracker.log_artifact(source / "weights.bin", artifact_path="models/best")
    tracker.log_artifacts(source, artifact_path="all")
    with pytest.raises(ValueError):
        tracker.log_artifact(source / "weights.bin", artifact_path="../outside")
    tracker.finish()
    artifacts = tracker.dir / "artifacts"
    assert sorted(_tree(artifacts)) == [
        "all",
        "all/sub",
        "all/sub/notes.txt",
        "all/weights.bin",
        "models",
        "models/best",
        "models/best/weights.bin",
        "weights.bin",
    ]


def test_repo_only_options_are_ignored_with_one_warning(isolated: Path):
    with pytest.raises(TypeError, match="unknown arguments"):
        DVCLiveTracker("x", not_an_option=1)
    tracker = DVCLiveTracker("x", logging_dir=isolated / "logs", save_dvc_exp=True, dvcyaml="dvc.yaml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracker.start()
        tracker.log({"loss": 1.0}, step=0)
        tracker.finish()
    messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert sum("dvcyaml, save_dvc_exp" in message for message in messages) == 1, messages
    assert not (isolated / "work" / "dvc.yaml").exists() and not list(tracker.dir.glob("*dvc.yaml"))


# -- resume ------------------------------------------------------------------------------------------------
def test_resume_in_process_appends_to_the_same_folder(isolated: Path, dvclive_files):
    logs = isolated / "logs"
    first = finished_run(DVCLiveTracker, logs, range(5), config={"lr": 0.1})
    state = first.resume_state()
    assert state == {"dir": str((logs / "resume" / "run-1" / "dvclive").absolute())}
    second = finished_run(DVCLiveTracker, logs, range(5, 8), state)
    assert second.dir == Path(state["dir"])
    assert dvclive_files.scalars(second.dir) == {"loss": {s: loss(s) for s in range(8)}}
    assert dvclive_files.params(second.dir) == {"lr": 0.1}  # kept: DVCLive's resume reads params.yaml back
    assert second.read_back_metrics() == {"loss": {s: loss(s) for s in range(8)}}


def test_resume_after_sigkill_keeps_every_flushed_point(isolated: Path):
    logs = isolated / "logs"
    state = state_of_a_killed_run(DVCLiveTracker, logs, cwd=isolated / "work", steps=6)
    resumed = started_tracker(DVCLiveTracker, logs, state)
    assert resumed.read_back_history() == {"loss": [(s, loss(s)) for s in range(6)]}
    log_loss(resumed, range(4, 8))  # steps the killed process had already written show twice
    resumed.finish()
    history = resumed.read_back_history()["loss"]
    assert [step for step, _ in history] == [0, 1, 2, 3, 4, 5, 4, 5, 6, 7]
    assert resumed.read_back_metrics() == {"loss": {s: loss(s) for s in range(8)}}


def test_resumed_folder_keeps_the_key_layout(isolated: Path, dvclive_files):
    logs = isolated / "logs"
    first = started_tracker(DVCLiveTracker, logs)
    first.log({"a": 1.0}, step=0)
    first.finish()
    second = started_tracker(DVCLiveTracker, logs, first.resume_state())
    assert second.sanitize_key("a/b") == "a_b"  # "a" already holds a value in metrics.json
    second.log({second.sanitize_key("a/b"): 2.0}, step=1)
    second.finish()
    assert dvclive_files.summary(second.dir) == {"a": 1.0, "a_b": 2.0, "step": 1}
    third = started_tracker(DVCLiveTracker, logs, second.resume_state())
    assert third.sanitize_key("a/b") == "a_b"  # the same series as before, not a new name
    third.finish()


def test_resume_survives_files_a_killed_writer_truncated(isolated: Path, dvclive_files):
    """DVCLive rewrites metrics.json and params.yaml in place; a SIGKILL mid-write leaves them truncated,
    which DVCLive's own resume fails to parse. The tracker starts anyway, keeps the rows and says so."""
    logs = isolated / "logs"
    first = finished_run(DVCLiveTracker, logs, range(3), config={"lr": 0.1})
    (first.dir / "metrics.json").write_text('{"loss": 0.3', encoding="utf-8")
    (first.dir / "params.yaml").write_text("", encoding="utf-8")
    second = finished_run(DVCLiveTracker, logs, range(3, 5), first.resume_state())
    assert dvclive_files.scalars(second.dir) == {"loss": {s: loss(s) for s in range(5)}}
    assert dvclive_files.summary(second.dir) == {"loss": loss(4), "step": 4}
    notes = second.report_notes()
    assert sorted(Path(note.split(" ")[0]).name for note in notes) == ["metrics.json", "params.yaml"], notes
    assert all("could not be read" in note for note in notes), notes


def test_summary_and_params_are_replaced_whole(isolated: Path):
    """Written to a temporary file and renamed, never rewritten in place: a hard link to the first version
    keeps that version (an in-place rewrite would change it), and no temporary file is left."""
    tracker = started_tracker(DVCLiveTracker, isolated / "logs")
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 1.0}, step=0)
    os.link(tracker.dir / "metrics.json", isolated / "metrics-v1.json")
    os.link(tracker.dir / "params.yaml", isolated / "params-v1.yaml")
    first_summary = (isolated / "metrics-v1.json").read_text()
    tracker.store_init_configuration({"lr": 0.2})
    tracker.log({"loss": 0.5}, step=1)
    tracker.finish()
    assert (isolated / "metrics-v1.json").read_text() == first_summary
    assert (isolated / "params-v1.yaml").read_text() == "lr: 0.1\n"
    assert (tracker.dir / "params.yaml").read_text() == "lr: 0.2\n"
    assert not list(tracker.dir.glob("*.tracking-tmp"))
