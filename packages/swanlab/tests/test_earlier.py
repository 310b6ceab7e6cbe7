"""What only SwanLab 0.5.8 to 0.7.x (the earlier SDK line, no ``swanlab.sdk``) does: the ``sdk-path.swanlab-0.6.2``
and ``-0.7.20`` cells run these, the floor cell (0.5.8) those not about offline mode.

From 0.6.2 its run folder holds ``backup.swanlab`` (JSON records), read back with that release's own
``DataStore``; before, a run is written in local mode (test_local.py). The rest of the package's tests run
on this line too; here is what it lacks or spells differently.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

import pytest
from tracking_core import TrackingWarning
from tracking_core.notices import reset_warnings
from tracking_core.testing.resume import finished_run, log_loss, loss, started_tracker
from tracking_swanlab import SwanLabTracker
from tracking_swanlab.older import v0_5_8, v0_6_2
from tracking_swanlab.reader import read_run

from .conftest import isolate

pytestmark = pytest.mark.skipif(not v0_6_2.in_use(), reason="SwanLab 0.8+ is installed: not the earlier SDK line")
#: SwanLab 0.5.8 to 0.6.1 have no offline mode (test_local.py has what they do instead).
LOCAL = v0_5_8.in_use()
offline_only = pytest.mark.skipif(LOCAL, reason="SwanLab before 0.6.2 has no offline mode: test_local.py")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate(monkeypatch, tmp_path, root=False)
    reset_warnings()
    return tmp_path


@offline_only
def test_the_run_file_is_read_with_swanlabs_own_datastore(tmp_path: Path) -> None:
    from tracking_swanlab.older.v0_6_2 import reader

    tracker = finished_run(SwanLabTracker, tmp_path / "logs", range(3), config={"lr": 0.1})
    path = tracker.run_dir / "backup.swanlab"
    kinds = [reader.kind(record) for record in reader.records(path)]
    assert kinds[:3] == ["Header", "Project", "Experiment"] and kinds[-1] == "Footer", kinds
    assert kinds.count("Scalar") == 3
    data = read_run(tracker.run_dir)
    assert (data.project, data.name, data.finished) == ("resume", tracker.experiment_name, True)
    assert data.scalars == {"loss": {s: loss(s) for s in range(3)}} and data.config == {"lr": 0.1}


def test_the_packages_defaults_keep_what_the_user_and_merge_settings_chose(tmp_path: Path) -> None:
    """SwanLab merges the settings passed to ``init`` over its global ones field by field, all fields at once:
    the defaults of this package (the package-manager probes off) go only where neither the user's
    ``settings`` nor ``merge_settings`` chose; everything else is as SwanLab defaults it."""
    import swanlab
    from swanlab.swanlab_settings import get_settings

    # max_log_length: a field every release of the line has (log_proxy_type, the first choice, comes in 0.5.9)
    merged = "log_proxy_type" if "log_proxy_type" in swanlab.Settings.model_fields else "max_log_length"
    value = {"log_proxy_type": "stderr", "max_log_length": 600}[merged]
    swanlab.merge_settings(swanlab.Settings(**{merged: value}))
    chosen = swanlab.Settings(hardware_monitor=False, conda_collect=True)
    tracker = started_tracker(SwanLabTracker, tmp_path / "logs", settings=chosen)
    try:
        used = get_settings()
        assert (getattr(used, merged), used.hardware_monitor, used.conda_collect) == (value, False, True)  # theirs
        assert used.collect_hardware and used.collect_runtime  # SwanLab's defaults
        assert used.requirements_collect is False  # this package's: it runs pip/uv/pixi
    finally:
        tracker.finish()


def test_a_start_off_the_main_thread_asks_nothing_and_writes_offline(tmp_path: Path) -> None:
    """No credentials: offline under logging_dir; a chosen cloud mode without a key fails before SwanLab asks."""
    outcome: list[object] = []

    def work() -> None:
        tracker = started_tracker(SwanLabTracker, tmp_path / "logs")
        tracker.finish()
        outcome.append(tracker)
        try:
            started_tracker(SwanLabTracker, tmp_path / "logs", mode="cloud")
        except RuntimeError as error:
            outcome.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(60)
    tracker, refused = outcome
    assert tracker.mode == ("local" if LOCAL else "offline") and tracker.run_dir.parent == tmp_path / "logs" / "swanlog"
    assert isinstance(refused, RuntimeError) and "no API key" in str(refused)


@offline_only
def test_an_offline_resume_is_a_new_part_under_the_saved_name_with_a_note(tmp_path: Path) -> None:
    from tracking_swanlab.older.v0_6_2 import reader

    logs = tmp_path / "logs"
    first = finished_run(SwanLabTracker, logs, range(3))
    with pytest.warns(TrackingWarning, match="cannot continue run"):
        second = started_tracker(SwanLabTracker, logs, first.resume_state())
    log_loss(second, range(3, 5))
    second.finish()

    part = second.run.part_id
    assert second.run_id == first.run_id != part and second.run_dir.name.endswith(part)
    assert second.resume_state()["id"] == first.run_id  # a third process continues the same run
    [experiment] = [r for r in reader.records(second.run_dir / "backup.swanlab") if reader.kind(r) == "Experiment"]
    assert experiment.name == first.experiment_name
    assert second.read_back_metrics() == {"loss": {s: loss(s) for s in range(5)}}
    notes = second.report_notes()
    assert any(f"as the new SwanLab run {part}" in note for note in notes), notes
    import swanlab

    upload = next(note for note in notes if "upload in this order" in note)
    if "id" in __import__("inspect").signature(swanlab.sync).parameters:
        assert f"swanlab sync --id auto {first.run_dir}; swanlab sync --id {first.run_id} {second.run_dir}" in upload
    else:
        assert "has no --id" in upload


def test_a_release_without_tables_or_saved_files_says_so_once(tmp_path: Path) -> None:
    import swanlab

    has_tables = getattr(getattr(swanlab, "echarts", None), "Table", None) is not None
    if has_tables and hasattr(swanlab, "save"):
        pytest.skip("this release has tables and saved files")
    artifact = tmp_path / "model.txt"
    artifact.write_text("weights")
    tracker = started_tracker(SwanLabTracker, tmp_path / "logs")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(2):
            tracker.log_table("scores", columns=["a"], data=[[step]], step=step)
            tracker.log_artifact(artifact)
            tracker.log({"loss": loss(step)}, step=step)
    tracker.finish()
    messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    expected = (not has_tables) + (not hasattr(swanlab, "save"))
    assert len(messages) == expected and all("this SwanLab release has no" in m for m in messages), messages
    assert len([note for note in tracker.report_notes() if "this SwanLab release has no" in note]) == expected
    assert tracker.read_back_metrics() == {"loss": {0: loss(0), 1: loss(1)}}  # everything else arrived


@offline_only
def test_a_resumed_part_whose_file_is_still_empty_reads_as_no_records(tmp_path: Path) -> None:
    """Right after a resumed start, the new part's ``backup.swanlab`` holds nothing on disk yet (SwanLab's
    writer buffers even its header): the history is the earlier part's, which is how the dispatcher learns
    how far the earlier process got (a failed read made it skip records the backend never stored)."""
    logs = tmp_path / "logs"
    first = finished_run(SwanLabTracker, logs, range(5))
    with pytest.warns(TrackingWarning, match="cannot continue run"):
        second = started_tracker(SwanLabTracker, logs, first.resume_state())
    try:
        assert (second.run_dir / "backup.swanlab").stat().st_size < 7
        assert second.read_back_history() == {"loss": [(s, loss(s)) for s in range(5)]}
    finally:
        second.finish()


def test_the_log_folder_from_the_environment_wins_and_is_given_back(tmp_path: Path, monkeypatch) -> None:
    """``SWANLAB_LOG_DIR`` is the user's choice; ``swanlab.init`` also writes its folder there, which finish() undoes."""
    monkeypatch.setenv("SWANLAB_LOG_DIR", str(tmp_path / "env-dir"))
    tracker = finished_run(SwanLabTracker, tmp_path / "logs", range(2))
    assert tracker.run_dir.parent == tmp_path / "env-dir"
    assert os.environ["SWANLAB_LOG_DIR"] == str(tmp_path / "env-dir")
    monkeypatch.delenv("SWANLAB_LOG_DIR")
    tracker = finished_run(SwanLabTracker, tmp_path / "logs", range(2))
    assert tracker.run_dir.parent == tmp_path / "logs" / "swanlog" and "SWANLAB_LOG_DIR" not in os.environ
    assert read_run(tracker.run_dir).scalars == {"loss": {0: loss(0), 1: loss(1)}}


def test_a_run_id_chosen_for_an_offline_run_is_not_used_and_said_so(tmp_path: Path) -> None:
    """Offline, 0.6.5 on refuse ``id`` (cloud only) and earlier releases take none: one warning and a note."""
    with pytest.warns(TrackingWarning, match="continues a run only online"):
        tracker = finished_run(SwanLabTracker, tmp_path / "logs", range(2), id="chosen0000000000000000")
    assert tracker.run_id != "chosen0000000000000000" and tracker.read_back_metrics() == {
        "loss": {0: loss(0), 1: loss(1)}
    }
    assert [note for note in tracker.report_notes() if "id='chosen0000000000000000' is not used offline" in note]


CRASHING = """
import tracking_core
run = tracking_core.init("crash", log_with="swanlab", logging_dir="runs")
run.log({"a": 1.0}, step=0)
run.get_tracker("swanlab", unwrap=True)  # SwanLab's run is up (its init set SwanLab's own sys.excepthook)
raise RuntimeError("the training loop crashed")
"""


def test_an_uncaught_exception_still_marks_the_run_crashed(tmp_path: Path) -> None:
    """SwanLab 0.5.8 to 0.7.x replace ``sys.excepthook`` at init and reset it to ``sys.__excepthook__`` at
    finish; the library's own hook, which records ``crashed`` in ``run.json``, must survive both."""
    import json

    from tracking_core.testing.reliability import run_script

    result = run_script(CRASHING, cwd=tmp_path, timeout=120)
    assert result.returncode == 1 and "the training loop crashed" in result.stderr, result.stderr[-2000:]
    (manifest,) = (tmp_path / "runs" / "crash").glob("*/run.json")
    assert json.loads(manifest.read_text())["status"] == "crashed: RuntimeError"
