"""``delivery="process"``: the backends run in a delivery process; the training process only feeds it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings

import pytest
from tracking_core import Dispatcher, TrackingWarning
from tracking_core.store.journal import JournalSummary
from tracking_core.testing import MemoryTracker
from tracking_core.testing.reliability import tally

from .helpers import logged_without_waiting

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pass_fds: POSIX only")


def _points(run_dir) -> list[int]:
    return [step for step, _ in JournalSummary(run_dir).metrics.get("loss", [])]


def test_backends_run_in_the_delivery_process_and_deliver_everything(tmp_path):
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery="process")
    run.init_trackers("p", config={"lr": 0.1})
    for step in range(2000):
        run.log({"loss": float(step)}, step=step)
    run.log_config({"late": 1})
    run.log_histogram("w", [1.0, 2.0], step=1999)
    assert run.flush(30)
    assert run.state.link is not None and run.state.link.process.pid != os.getpid()
    assert run.get_tracker("jsonl")._writer is None  # the object here is a stand-in: the journal is written there
    report = run.finish()
    assert report.ok, str(report)
    assert report.backends["jsonl"].delivered == 2003
    summary = JournalSummary(run.run_dir)
    assert _points(run.run_dir) == list(range(2000))
    assert summary.config == {"lr": 0.1, "late": 1} and summary.finished


def test_unwrapping_a_backend_hands_it_back_to_the_training_process(tmp_path):
    """``get_tracker(name, unwrap=True)`` under ``delivery="process"``: the backend moves here (its SDK object is
    this process's), every record logged before, during and after the move reaches it once, in order, and the
    other backends stay in the delivery process."""
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery="process")
    run.init_trackers("p", config={"lr": 0.1})
    for step in range(500):
        run.log({"loss": float(step)}, step=step)
    writer = run.get_tracker("jsonl", unwrap=True)
    assert writer is not None and run.get_tracker("jsonl", unwrap=True) is writer  # the SDK object, here
    assert run.get_tracker("jsonl")._writer is writer  # the tracker object here now writes the journal
    for step in range(500, 1000):
        run.log({"loss": float(step)}, step=step)
    report = run.finish()
    assert report.ok, str(report)
    assert _points(run.run_dir) == list(range(1000))
    assert JournalSummary(run.run_dir).finished
    assert any("handed back" in note for note in report.backends["jsonl"].notes)


@pytest.mark.parametrize(("setting", "lowered_by"), [(None, 10), ("19", 19), ("0", 0)])
def test_the_delivery_process_yields_the_cpu_to_the_training_loop(tmp_path, monkeypatch, setting, lowered_by):
    if setting is None:
        monkeypatch.delenv("TRACKING_DELIVERY_NICE", raising=False)
    else:
        monkeypatch.setenv("TRACKING_DELIVERY_NICE", setting)
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery="process")
    run.init_trackers("p")
    try:
        assert run.state.link is not None and run.state.link.wait_ready()
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, run.state.link.process.pid) == min(19, ours + lowered_by)
    finally:
        assert run.finish().ok


def test_trackers_it_cannot_import_stay_in_threads_here(memory, tmp_path):
    from tracking_core import register_tracker_class

    class Local(MemoryTracker):  # defined in a function: the delivery process could not import it
        name = "local"

    register_tracker_class(Local)
    run = Dispatcher(log_with=["local", "jsonl"], logging_dir=tmp_path, delivery="process")
    run.init_trackers("p")
    run.log({"loss": 1.0}, step=0)
    report = run.finish()
    assert report.ok, str(report)
    assert MemoryTracker.runs[-1].metrics == [(0, {"loss": 1.0})]  # it ran here, in a thread
    assert _points(run.run_dir) == [0]


def test_a_direct_call_on_a_remote_tracker_reaches_it(tmp_path):
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery="process")
    run.init_trackers("p")
    run.get_tracker("jsonl").log({"loss": 5.0}, step=5)
    run.get_tracker("jsonl").flush()
    run.finish()
    assert _points(run.run_dir) == [5]


@pytest.mark.reliability
@pytest.mark.parametrize("when", ["after a flush", "mid-stream"])
def test_a_killed_delivery_process_costs_nothing(tmp_path, when):
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery="process")
    run.init_trackers("p")
    for step in range(1500):
        run.log({"loss": float(step)}, step=step)
        if step == 1000:
            if when == "after a flush":
                run.flush(30)
            assert run.state.link is not None
            os.kill(run.state.link.process.pid, signal.SIGKILL)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(1500, 3000):
            run.log({"loss": float(step)}, step=step)
        report = run.finish()
    figures = tally(f"delivery process SIGKILLed ({when})", "jsonl", range(3000), _points(run.run_dir))
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert any("delivery process died" in note for note in report.backends["jsonl"].notes)
    assert (
        sum("delivery process died" in str(w.message) for w in caught if issubclass(w.category, TrackingWarning)) <= 1
    )


KILLED_SCRIPT = r"""
import os, signal, sys, time
from tracking_core import Dispatcher

run = Dispatcher(log_with=["jsonl"], logging_dir=sys.argv[1], delivery="process")
run.init_trackers("p")
for step in range(600):
    run.log({"loss": float(step)}, step=step)
    if step == 499:
        run.flush(30)
time.sleep(1.0)  # the feeder has sent the last 100 by now
print(run.run_dir, run.state.link.process.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.reliability
def test_when_the_training_process_is_killed_the_delivery_process_finishes_the_run(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", KILLED_SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    run_dir, pid = done.stdout.split()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the delivery process outlived its training process by more than 60 s")
    summary = JournalSummary(run_dir)
    stored = [step for step, _ in summary.metrics["loss"]]
    figures = tally("training process SIGKILLed (delivery process)", "jsonl", range(600), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert summary.finished  # the delivery process closed the journal


SLOW_TEARDOWN_TRACKER = r"""
import atexit, os, pathlib, time
from tracking_core.backends.jsonl import JsonlTracker


def _slow_teardown(marker):
    time.sleep(4.0)  # an SDK whose modules take long to tear down (MLflow: about a second)
    marker.write_text("the delivery process got to the end of its teardown")


class SlowTeardown(JsonlTracker):
    name = "slow-teardown"

    def finish(self):
        super().finish()
        atexit.register(_slow_teardown, pathlib.Path(os.environ["TEARDOWN_MARKER"]))
"""

SLOW_TEARDOWN_SCRIPT = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from slow_teardown_tracker import SlowTeardown
from tracking_core import Dispatcher, register_tracker_class

register_tracker_class(SlowTeardown)
run = Dispatcher(log_with=["slow-teardown"], logging_dir=sys.argv[1], delivery="process")
run.init_trackers("p")
for step in range(100):
    run.log({"loss": float(step)}, step=step)
report = run.finish()
print(report.ok, run.state.link.process.poll() is None, (Path(sys.argv[1]) / "teardown-done").exists(), flush=True)
print(run.run_dir, flush=True)
"""


def test_finish_returns_once_everything_is_durable_and_the_exit_waits_for_the_delivery_process(tmp_path):
    """``finish()`` returns when every backend there reported finished, not after that interpreter's
    teardown; this interpreter's exit still waits for it, so nothing is left writing behind the script."""
    (tmp_path / "slow_teardown_tracker.py").write_text(SLOW_TEARDOWN_TRACKER)
    done = subprocess.run(
        [sys.executable, "-c", SLOW_TEARDOWN_SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TEARDOWN_MARKER": str(tmp_path / "teardown-done")},
    )
    assert done.returncode == 0, done.stderr
    ok, running_after_finish, torn_down_before_finish_returned, run_dir = done.stdout.split()
    assert ok == "True", done.stderr
    assert running_after_finish == "True", "finish() waited for the delivery process's teardown"
    assert torn_down_before_finish_returned == "False"
    assert (tmp_path / "teardown-done").exists(), "the script's exit did not wait for the delivery process"
    stored = [step for step, _ in JournalSummary(run_dir).metrics["loss"]]
    assert stored == list(range(100))


@pytest.mark.reliability
def test_a_backend_that_goes_down_recovers_in_the_delivery_process(tmp_path):
    from tracking_core import register_tracker_class
    from tracking_core.store.journal import read_journal
    from tracking_core.testing.faults import DOWN_FILE, SwitchedJournal

    register_tracker_class(SwitchedJournal)
    run = Dispatcher(log_with=["switched"], logging_dir=tmp_path, delivery="process", retry_backoff=(0.05, 0.4))
    run.init_trackers("p")
    assert run.state.link is not None and "switched" in run.state.link.workers  # it runs over there
    down = run.run_dir / DOWN_FILE
    for step in range(300):
        if step == 50:
            run.flush(30)
            down.touch()
        if step == 200:
            down.unlink()
        run.log({"loss": float(step)}, step=step)
        time.sleep(0.002)
    report = run.finish()
    stored = [entry["step"] for entry in read_journal(run.run_dir / "switched.jsonl") if entry["type"] == "metrics"]
    figures = tally("backend down 1/2 of the run (delivery process)", "switched", range(300), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    backend = report.backends["switched"]
    assert backend.state == "finished" and backend.recovered > 0 and backend.spilled == 0, backend


RESUMED_SCRIPT = r"""
import os, signal, sys
from tracking_core import Dispatcher

run = Dispatcher(log_with=["jsonl"], logging_dir=sys.argv[1], delivery="process", resume=sys.argv[2] == "resume")
run.init_trackers("p")
for _ in range(500):
    run.log({"loss": 1.0})
run.flush(30)
if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
run.finish()
"""


@pytest.mark.reliability
def test_a_killed_job_resumes_in_process_mode(tmp_path):
    first = subprocess.run([sys.executable, "-c", RESUMED_SCRIPT, str(tmp_path), "kill"], timeout=120)
    assert first.returncode == -signal.SIGKILL
    time.sleep(1.0)  # the orphaned delivery process closes the journal
    second = subprocess.run(
        [sys.executable, "-c", RESUMED_SCRIPT, str(tmp_path), "resume"], capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 0, second.stderr
    (run_dir,) = [path.parent for path in tmp_path.glob("p/*/run.json")]
    figures = tally("SIGKILL, then resume=True (delivery process)", "jsonl", range(1000), _points(run_dir))
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_leaves_the_delivery_process_alone(tmp_path):
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery="process")
    run.init_trackers("p")
    for step in range(50):
        run.log({"loss": float(step)}, step=step)
    pid = os.fork()
    if pid == 0:  # the child: every call is inert
        code = 0
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for step in range(1000):
                    run.log({"loss": -1.0}, step=step)
                run.finish()
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    for step in range(50, 100):
        run.log({"loss": float(step)}, step=step)
    report = run.finish()
    assert report.ok, str(report)
    assert _points(run.run_dir) == list(range(100))


FORGOTTEN_SCRIPT = r"""
import sys
from tracking_core import Dispatcher

run = Dispatcher(log_with=["jsonl"], logging_dir=sys.argv[1], delivery="process")
run.init_trackers("p")
for step in range(300):
    run.log({"loss": float(step)}, step=step)
if sys.argv[2] == "raise":
    raise SystemExit("the script ends with an error, and without finish()")
"""


@pytest.mark.reliability
@pytest.mark.parametrize("how", ["normal", "raise"])
def test_a_script_without_finish_delivers_everything_through_the_delivery_process(tmp_path, how):
    done = subprocess.run(
        [sys.executable, "-c", FORGOTTEN_SCRIPT, str(tmp_path), how], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == (0 if how == "normal" else 1), done.stderr
    (run_dir,) = [path.parent for path in tmp_path.glob("p/*/run.json")]
    figures = tally(f"no finish(), {how} exit (delivery process)", "jsonl", range(300), _points(run_dir))
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert JournalSummary(run_dir).finished


def test_on_error_raise_reports_a_failure_in_the_delivery_process(tmp_path):
    from tracking_core import TrackingError, register_tracker_class
    from tracking_core.testing.faults import DOWN_FILE, SwitchedJournal

    register_tracker_class(SwitchedJournal)
    run = Dispatcher(
        log_with=["switched"], logging_dir=tmp_path, delivery="process", on_error="raise", retry_backoff=(60, 60)
    )
    run.init_trackers("p")
    run.flush(30)
    (run.run_dir / DOWN_FILE).touch()
    run.log({"loss": 1.0}, step=0)
    with pytest.raises(TrackingError, match="switched"):
        run.flush(30)
        run.log({"loss": 2.0}, step=1)  # the failure arrives asynchronously: the next call raises it
        time.sleep(1.0)
        run.flush(30)
    (run.run_dir / DOWN_FILE).unlink()
    run.finish()


def test_the_environment_chooses_the_delivery_when_the_code_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACKING_DELIVERY", "process")
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path)
    run.init_trackers("p")
    assert run.options.delivery == "process" and run.state.link is not None
    assert run.finish().ok
    explicit = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery="thread")
    assert explicit.options.delivery == "thread"  # what the code says wins
    monkeypatch.setenv("TRACKING_DELIVERY", "fork")
    with pytest.raises(ValueError, match="TRACKING_DELIVERY"):
        Dispatcher(log_with=["jsonl"], logging_dir=tmp_path)


UNPICKLABLE_SCRIPT = r"""
import sys, threading, warnings
import tracking_core

warnings.simplefilter("always")

class Unsendable:
    "Draws itself like a matplotlib figure, but neither copies nor pickles (it holds a lock)."
    def __init__(self):
        self.lock = threading.Lock()
    def savefig(self, path, **kwargs):
        open(path, "wb").close()

run = tracking_core.init("p", log_with=["jsonl"], logging_dir=sys.argv[1], delivery="process", queue_size=100)
done = threading.Event()

def loop():
    run.log({"loss": 0.0}, step=0, log_kwargs={"jsonl": {"callback": lambda: 0, "note": "kept"}})
    run.log_figure(Unsendable(), "chart", step=0)
    for step in range(1, 500):
        run.log({"loss": float(step)}, step=step)
    done.set()

threading.Thread(target=loop, daemon=True).start()
assert done.wait(30), "log() hung"
report = run.finish(timeout=30)
print(report.backends["jsonl"].dropped, run.run_dir)
"""


def test_what_the_delivery_process_cannot_receive_is_left_out_with_a_warning(tmp_path):
    """Objects pickle cannot send (a lambda in ``log_kwargs``, a figure holding a lock): the feeder thread
    must not die of them, or the queue fills and ``log()`` (and the exit) waits forever. The kwarg is
    left out, the figure is not delivered; each with a warning, the figure counted as dropped."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", UNPICKLABLE_SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=90
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the training process hung")
    assert done.returncode == 0, done.stderr
    dropped, run_dir = done.stdout.split()
    assert dropped == "1"
    assert _points(run_dir) == list(range(500))
    assert "'callback'" in done.stderr and "left out" in done.stderr
    assert "a figure record cannot be sent to the delivery process" in done.stderr


def test_a_failure_in_the_training_processs_bookkeeping_does_not_stop_it_hearing_from_the_delivery_process(
    tmp_path, monkeypatch
):
    # run.json cannot be written (a full disk, say) when the delivery process reports progress: its
    # reports, flush acknowledgements and final reports must still get through.
    from tracking_core.run.session import RunSession

    def no_room(self, backend, seq, step):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RunSession, "progress", no_room)
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery="process", flush_interval=0.05)
    run.init_trackers("p")
    for step in range(100):
        run.log({"loss": float(step)}, step=step)
        if step % 25 == 24:
            assert run.flush(timeout=30)
    report = run.finish(timeout=30)
    assert report.backends["jsonl"].state == "finished", str(report)
    assert _points(run.run_dir) == list(range(100))


def test_a_loop_waiting_on_a_stuck_backend_in_the_delivery_process_says_so(tmp_path, monkeypatch, caplog):
    import logging
    import threading

    from tracking_core import register_tracker_class
    from tracking_core.delivery import worker
    from tracking_core.testing.faults import STUCK_FILE, SwitchedJournal

    register_tracker_class(SwitchedJournal)
    monkeypatch.setattr(worker, "ROOM_WARNING_SECONDS", 0.2)
    run = Dispatcher(log_with=["switched"], logging_dir=tmp_path, delivery="process", queue_size=20)
    run.init_trackers("p")
    stuck = run.run_dir / STUCK_FILE
    stuck.touch()
    enough, logged = threading.Event(), []

    def loop():  # until the queues here, to and in the delivery process are full and log() has waited
        while not enough.is_set():
            run.log({"loss": float(len(logged))}, step=len(logged))
            logged.append(True)

    with caplog.at_level(logging.WARNING, logger="tracking"):
        looping = threading.Thread(target=loop, daemon=True)
        looping.start()
        deadline = time.monotonic() + 30
        while "queue to the delivery process" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
        enough.set()
        stuck.unlink()
        looping.join(60)
    assert "log() has waited" in caplog.text and "queue to the delivery process" in caplog.text
    report = run.finish(timeout=60)
    assert report.backends["switched"].ok and _switched_points(run.run_dir) == list(range(len(logged)))


@pytest.mark.parametrize("then", ["call-returns", "delivery-process-killed"])
def test_a_backend_stuck_in_the_delivery_process_does_not_hold_up_the_loop(tmp_path, then):
    """The delivery process spills the queue of a backend stuck in one SDK call (after 5 s), so the queues
    before it drain and the loop goes on; once the call returns, every record is delivered once, in order.

    ``delivery-process-killed``: the delivery process is SIGKILLed while the call hangs; the backend,
    taken over in a thread here, gets its spill and what the training process kept."""
    from tracking_core import register_tracker_class
    from tracking_core.testing.faults import STUCK_FILE, SwitchedJournal

    register_tracker_class(SwitchedJournal)
    steps = 20_000  # more than the queues and the socket to the delivery process hold
    run = Dispatcher(log_with=["switched"], logging_dir=tmp_path, delivery="process", queue_size=1000)
    run.init_trackers("p")
    stuck = run.run_dir / STUCK_FILE
    stuck.touch()
    assert logged_without_waiting(run, range(steps), "loss"), "log() waited for the stuck call"
    if then == "delivery-process-killed":
        os.kill(run.state.link.process.pid, signal.SIGKILL)
    stuck.unlink()
    report = run.finish(timeout=60)
    stored = _switched_points(run.run_dir)
    scenario = "backend stuck in one SDK call in the delivery process" + (
        ", which is then SIGKILLed" if then == "delivery-process-killed" else ""
    )
    figures = tally(scenario, "switched", range(steps), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    entry = report.backends["switched"]
    assert entry.ok and stored == list(range(steps)), str(report)
    if then == "call-returns":
        assert entry.recovered > 0 and any("did not return" in note for note in entry.notes), str(report)


def _switched_points(run_dir) -> list[int]:
    from tracking_core.store.journal import read_journal

    return [entry["step"] for entry in read_journal(run_dir / "switched.jsonl") if entry["type"] == "metrics"]


@pytest.mark.parametrize("on_full", ["drop", "spill"])
def test_on_full_applies_in_the_delivery_process(tmp_path, on_full):
    """A backend stuck in the delivery process with ``on_full="drop"`` or ``"spill"``: records that find
    its queue full are dropped (and counted), or spilled and delivered in order once the call returns,
    there as with threads; either way the loop does not wait."""
    from tracking_core import register_tracker_class
    from tracking_core.testing.faults import STUCK_FILE, SwitchedJournal

    register_tracker_class(SwitchedJournal)
    steps = 20_000
    run = Dispatcher(log_with=["switched"], logging_dir=tmp_path, delivery="process", queue_size=1000, on_full=on_full)
    run.init_trackers("p")
    stuck = run.run_dir / STUCK_FILE
    stuck.touch()
    assert logged_without_waiting(run, range(steps), "loss"), "log() waited for the stuck call"
    stuck.unlink()
    report = run.finish(timeout=60)
    entry = report.backends["switched"]
    stored = _switched_points(run.run_dir)
    if on_full == "drop":
        assert entry.dropped > 0 and entry.spilled == 0, str(report)
        assert len(stored) + entry.dropped == steps and stored == sorted(set(stored)), str(report)
    else:
        figures = tally("on_full='spill', backend stuck in the delivery process", "switched", range(steps), stored)
        assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
        assert entry.ok and stored == list(range(steps)), str(report)
        assert not any("did not return" in note for note in entry.notes), str(report)  # spilled at once


@pytest.mark.parametrize("on_full", ["drop", "spill"])
def test_on_full_applies_to_the_queue_to_a_frozen_delivery_process(tmp_path, on_full):
    """The delivery process itself frozen (SIGSTOP): the queue to it fills in this process, and
    ``on_full`` decides there as everywhere — dropped and counted, or kept until it takes them again
    ("spill": they wait in this process's memory, as the records it has not yet confirmed already do)."""
    steps = 30_000
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, delivery="process", queue_size=200, on_full=on_full)
    run.init_trackers("p")
    run.flush(30)
    pid = run.state.link.process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        waited = not logged_without_waiting(run, range(steps), "loss", timeout=60)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert not waited, "log() waited for the frozen delivery process"
    report = run.finish(timeout=120)
    entry = report.backends["jsonl"]
    stored = _points(run.run_dir)
    assert stored == sorted(set(stored)), "a record was stored twice or out of order"
    if on_full == "drop":
        assert entry.dropped > 0 and len(stored) + entry.dropped == steps, str(report)
        assert any("queue to the delivery process was full" in note for note in entry.notes), str(report)
    else:
        figures = tally("on_full='spill', delivery process frozen", "jsonl", range(steps), stored)
        assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
        assert stored == list(range(steps)) and entry.ok, str(report)
