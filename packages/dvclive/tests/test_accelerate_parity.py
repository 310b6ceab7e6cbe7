"""DVCLiveTracker against Accelerate 1.15's: signatures, class attributes, direct synchronous use with an
injected ``Live`` and with DVCLive's default folder, and per-rank runs under real rank processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tracking_core
from tracking_core.testing.ranks import RANK, launch_ranks, positional_signature
from tracking_dvclive import DVCLiveTracker

# accelerate 1.15.0, src/accelerate/tracking.py, class DVCLiveTracker: each method's positional parameters
# (with defaults) and its ``**kwargs``. Keyword-only options of ours are allowed on top.
ACCELERATE_SIGNATURES = {
    "__init__": "self, run_name=None, live=None, **kwargs",
    "start": "self",
    "store_init_configuration": "self, values",
    "log": "self, values, step=None, **kwargs",
    "finish": "self",
}


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("DVCLIVE_", "DVC_")):
            monkeypatch.delenv(name)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


@pytest.mark.parametrize("method", sorted(ACCELERATE_SIGNATURES))
def test_signatures_match_accelerate(method: str):
    assert positional_signature(getattr(DVCLiveTracker, method)) == ACCELERATE_SIGNATURES[method]


def test_class_attributes_match_accelerate():
    assert DVCLiveTracker.name == "dvclive"
    assert DVCLiveTracker.requires_logging_directory is False
    assert DVCLiveTracker.main_process_only is True


def test_direct_use_writes_dvclives_default_folder(isolated: Path, dvclive_files):
    """No dispatcher, no logging_dir: ``./dvclive``, as ``Live()`` under Accelerate; Accelerate's calls in its order."""
    tracker = DVCLiveTracker("ignored-as-in-accelerate")
    assert tracker.live is None and tracker.tracker is None
    tracker.start()
    assert tracker.live is tracker.tracker and Path(tracker.live.dir) == Path("dvclive")
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


def test_managed_tracker_live_property_and_direct_calls(isolated: Path, dvclive_files):
    """Through a dispatcher ``start()`` runs in the worker: ``live`` read right after init waits for it."""
    run = tracking_core.init("managed", log_with="dvclive", logging_dir=isolated / "logs", on_error="raise")
    tracker = run.get_tracker("dvclive", unwrap=False)
    assert tracker.live is not None and Path(tracker.live.dir) == run.run_dir / "dvclive"
    assert run.get_tracker("dvclive", unwrap=True) is tracker.live
    run.log({"loss": 0.5}, step=0)
    assert run.finish(timeout=120).ok
    assert dvclive_files.scalars(tracker.dir) == {"loss": {0: 0.5}}


RANK_SCRIPT = """
import json, sys
from tracking_core import init
run = init("job", log_with="dvclive", logging_dir=sys.argv[2], per_rank=True)
run.log({"loss": float(sys.argv[1])}, step=0)
tracker = run.get_tracker("dvclive", unwrap=False)
assert run.finish().ok
print(json.dumps({"dir": str(tracker.dir), "group": tracker.run_context.group}))
"""


def test_per_rank_mode_end_to_end(isolated: Path, dvclive_files):
    logs = isolated / "logs"
    results = launch_ranks(RANK_SCRIPT, RANK, str(logs), port=29671, cwd=isolated / "work", timeout=300)
    (group,) = {result["group"] for result in results}
    folders = [Path(result["dir"]) for result in results]
    assert folders == [logs / "job" / group / f"rank-{rank}" / "dvclive" for rank in (0, 1)]
    assert [dvclive_files.scalars(folder) for folder in folders] == [{"loss": {0: 0.0}}, {"loss": {0: 1.0}}]
