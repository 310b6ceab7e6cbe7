"""DVCLiveTracker against Accelerate 1.15's: the shared suite (``tracking_core.testing.accelerate_parity``) plus
what only DVCLive has: its default folder, an injected ``Live``, one DVCLive folder per rank's run folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tracking_core
from tracking_core.testing.accelerate_parity import AccelerateParity
from tracking_dvclive import DVCLiveTracker

from .conftest import params, scalars


class TestDVCLiveAccelerateParity(AccelerateParity):
    backend_name = "dvclive"
    # accelerate 1.15.0, src/accelerate/tracking.py, class DVCLiveTracker: each method's positional parameters
    # (with defaults) and its ``**kwargs``. Keyword-only options of ours are allowed on top.
    accelerate_signatures = {
        "__init__": "self, run_name=None, live=None, **kwargs",
        "start": "self",
        "store_init_configuration": "self, values",
        "log": "self, values, step=None, **kwargs",
        "finish": "self",
    }
    sdk_attributes = ("tracker", "live")
    accelerate_requires_logging_directory = False
    accelerate_main_process_only = True
    rank_port = 29671
    unset_env = ("DVCLIVE_", "DVC_")

    def read_metrics(self, tracker):
        return scalars(tracker.dir)

    def read_config(self, tracker):
        return params(tracker.dir)


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for variable in [key for key in os.environ if key.startswith(("DVCLIVE_", "DVC_"))]:
        monkeypatch.delenv(variable)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


def test_direct_use_writes_dvclives_default_folder(isolated: Path, dvclive_files):
    """No dispatcher, no logging_dir: ``./dvclive``, as ``Live()`` under Accelerate; Accelerate's calls in its order."""
    tracker = DVCLiveTracker("ignored-as-in-accelerate")
    tracker.start()
    assert Path(tracker.live.dir) == Path("dvclive")
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=0)
    tracker.log({"loss": 0.25}, step=1, plot=True)  # a Live.log_metric keyword, as Accelerate passes it on
    tracker.finish()
    folder = isolated / "work" / "dvclive"
    assert dvclive_files.params(folder) == {"lr": 0.1}
    assert dvclive_files.scalars(folder) == {"loss": {0: 0.5, 1: 0.25}}
    assert dvclive_files.summary(folder) == {"loss": 0.25, "step": 1}


def test_an_injected_live_is_used_and_ended(isolated: Path, dvclive_files):
    from dvclive import Live

    live = Live(dir=str(isolated / "mine"), save_dvc_exp=False, dvcyaml=None)
    tracker = DVCLiveTracker(live=live)
    tracker.start()
    assert tracker.live is live
    tracker.log({"loss": 1.0}, step=4)
    tracker.finish()
    assert dvclive_files.scalars(isolated / "mine") == {"loss": {4: 1.0}}
    assert dvclive_files.summary(isolated / "mine") == {"loss": 1.0, "step": 4}


def test_a_managed_trackers_live_is_in_the_run_folder_and_is_what_get_tracker_unwraps(isolated: Path):
    run = tracking_core.init("managed", log_with="dvclive", logging_dir=isolated / "logs", on_error="raise")
    tracker = run.get_tracker("dvclive", unwrap=False)
    assert Path(tracker.live.dir) == run.run_dir / "dvclive"
    assert run.get_tracker("dvclive", unwrap=True) is tracker.live
    assert run.finish(timeout=120).ok


def test_each_rank_has_a_dvclive_folder_in_its_run_folder(isolated: Path):
    suite = TestDVCLiveAccelerateParity()
    for rank in (0, 1):
        tracker = DVCLiveTracker("ranks", logging_dir=isolated / "logs")
        tracker.run_context = context = suite.per_rank_context(isolated, rank)
        tracker.start()
        tracker.finish()
        assert tracker.dir == context.run_dir / "dvclive" and context.run_dir.name == f"rank-{rank}"
