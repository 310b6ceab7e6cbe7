"""What thread and process delivery must do alike (each test runs in both modes).

These pin behaviours where the two paths had drifted apart: the resume bookkeeping done when a
backend starts, and the cause an ``on_error="raise"`` error carries.
"""

from __future__ import annotations

import json
import logging
import time

import pytest
from tracking_core import Dispatcher, TrackingError, register_tracker_class
from tracking_core.testing.faults import DOWN_FILE, SwitchedJournal, UnsavableState

MODES = ["thread", "process"]


@pytest.fixture(autouse=True)
def _fault_backends():
    from tracking_core.contract import registry

    register_tracker_class(SwitchedJournal)
    register_tracker_class(UnsavableState)
    yield
    registry.unregister_tracker_class("switched")
    registry.unregister_tracker_class("unsavable")


@pytest.mark.parametrize("mode", MODES)
def test_an_error_raised_by_on_error_raise_keeps_the_backends_exception_and_traceback(tmp_path, mode):
    run = Dispatcher(
        log_with=["switched"], logging_dir=tmp_path, delivery=mode, on_error="raise", retry_backoff=(60, 60)
    )
    run.init_trackers("p")
    run.flush(30)
    (run.run_dir / DOWN_FILE).touch()
    run.log({"loss": 1.0}, step=0)
    with pytest.raises(TrackingError, match="switched") as caught:
        for _ in range(50):
            run.flush(30)
            time.sleep(0.1)
    cause = caught.value.__cause__
    assert cause is not None, "the backend's exception was lost on the way"
    text = str(cause) if not isinstance(cause, ConnectionError) else "ConnectionError: " + str(cause)
    assert "ConnectionError" in text and "connection refused" in text, text
    trace = "".join(__import__("traceback").format_exception(cause)) + getattr(cause, "remote_traceback", "")
    assert "_refuse_while_down" in trace, trace
    (run.run_dir / DOWN_FILE).unlink()
    run.finish()


@pytest.mark.parametrize("mode", MODES)
def test_resuming_a_run_that_has_no_state_for_a_backend_says_it_is_a_new_run_there(tmp_path, mode):
    first = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery=mode)
    first.init_trackers("p")
    first.log({"loss": 1.0}, step=0)
    assert first.finish().ok
    again = Dispatcher(log_with=["jsonl", "switched"], logging_dir=tmp_path, delivery=mode, resume=True)
    again.init_trackers("p")
    again.log({"loss": 0.5}, step=1)
    report = again.finish()
    assert again.run_id == first.run_id
    notes = report.backends["switched"].notes
    assert any("not resumed: the earlier run left no switched state" in note for note in notes), notes
    assert not any("not resumed" in note for note in report.backends["jsonl"].notes)


@pytest.mark.parametrize("mode", MODES)
def test_a_resume_state_that_is_not_json_is_warned_about_and_not_kept(tmp_path, mode, caplog):
    run = Dispatcher(log_with=["unsavable"], logging_dir=tmp_path, delivery=mode)
    with caplog.at_level(logging.WARNING, logger="tracking"):
        run.init_trackers("p")
        run.log({"loss": 1.0}, step=0)
        report = run.finish()
    assert report.ok, str(report)
    manifest = json.loads((run.run_dir / "run.json").read_text())
    assert manifest["backends"]["unsavable"] is None, manifest["backends"]
    assert any("resume_state()" in r.getMessage() and "unsavable" in r.getMessage() for r in caplog.records)
