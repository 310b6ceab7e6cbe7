"""Delivery guarantees under the faults real jobs meet, with real processes, files and signals.

Each scenario counts records sent / delivered / spilled / lost / duplicated (printed at the end of
the session); lost and duplicated must be 0.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest
from tracking_core import Dispatcher, PartialDelivery, TrackingError, register_tracker_class
from tracking_core.cli.replay import replay
from tracking_core.store.journal import read_journal
from tracking_core.testing import MemoryTracker
from tracking_core.testing.reliability import run_script, tally, waiting_steps

from .helpers import FailingTracker, StuckOnRetryTracker

pytestmark = pytest.mark.reliability


def _steps(path: Path) -> list[int]:
    return [entry["step"] for entry in read_journal(path) if entry["type"] == "metrics"] if path.exists() else []


# -- 1. a script that never calls finish() ------------------------------------------------------------

FORGETFUL = """
import sys, time, tracking_core
from tracking_core import GeneralTracker, register_tracker_class

class SlowStart(GeneralTracker):
    '''Starts like an SDK that imports for a while and registers its own exit hook.'''
    name = "slowstart"
    requires_logging_directory = False
    def __init__(self, run_name, **kwargs):
        super().__init__()
        self.path = kwargs["path"]
    @property
    def tracker(self):
        return self
    def start(self):
        time.sleep(0.5)
        import atexit, concurrent.futures
        self.pool = concurrent.futures.ThreadPoolExecutor(1)  # threads an SDK starts while shutting down
        atexit.register(self.close_like_an_sdk)
        self.file = open(self.path, "a")
        self.open = True
    def close_like_an_sdk(self):
        self.open = False
    def log_batch(self, entries):
        for values, step, kwargs in entries:
            self.log(values, step)
    def log(self, values, step=None, **kwargs):
        assert self.open, "logged after the SDK's own exit hook closed it"
        self.pool.submit(lambda: None).result()
        self.file.write(f"{step}\\n")
        self.file.flush()

register_tracker_class(SlowStart)
run = tracking_core.init("forgot", log_with=["jsonl", "slowstart"], logging_dir=sys.argv[1],
                         init_kwargs={"slowstart": {"path": sys.argv[2]}})
for step in range(500):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
if sys.argv[3] == "raise":
    raise RuntimeError("the training loop crashed")
"""


@pytest.mark.parametrize("ending", ["normal", "raise"])
def test_a_run_never_finished_delivers_everything_at_exit(tmp_path, ending):
    stored = tmp_path / "slowstart.txt"
    result = run_script(FORGETFUL, str(tmp_path / "runs"), str(stored), ending, cwd=tmp_path, timeout=120)
    assert result.returncode == (0 if ending == "normal" else 1), result.stderr
    assert "the training loop crashed" in result.stderr or ending == "normal"
    assert "can't register atexit" not in result.stderr and "logged after" not in result.stderr
    (run_dir,) = (tmp_path / "runs" / "forgot").iterdir()
    journal = _steps(run_dir / "journal.jsonl")
    sdk = [int(line) for line in stored.read_text().split()]
    for backend, steps in (("jsonl", journal), ("slowstart", sdk)):
        figures = tally(f"no finish(), {ending} exit", backend, range(500), steps)
        assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert json.loads((run_dir / "run.json").read_text())["last_step"] == 499
    assert any(entry["type"] == "finish" for entry in read_journal(run_dir / "journal.jsonl"))


# -- 2. fork ---------------------------------------------------------------------------------------------

FORKING = """
import multiprocessing, os, sys, time, warnings, tracking_core

run = tracking_core.init("forked", log_with="jsonl", logging_dir=sys.argv[1])
run.log({"loss": 0.0}, step=0)

def in_child(_):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        began = time.monotonic()
        for step in range(20_000):  # twice the queue size: a child must never wait for workers it lacks
            run.log({"child": 1.0})
        run.flush()
        report = run.finish()
    return time.monotonic() - began, len(caught), len(report.backends)

pid = os.fork()
if pid == 0:
    seconds, warned, backends = in_child(None)
    print(f"child {seconds:.2f} {warned} {backends}", flush=True)
    sys.exit(0)  # a normal exit: must not print the parent's report or touch its files
os.waitpid(pid, 0)
with multiprocessing.get_context("fork").Pool(2) as pool:
    print("pool", pool.map(in_child, range(2)), flush=True)
for step in range(1, 100):
    run.log({"loss": float(step)}, step=step)
print("parent", run.finish().ok, flush=True)
"""


def test_a_forked_child_is_inert_and_the_parent_unaffected(tmp_path):
    result = run_script(FORKING, str(tmp_path / "runs"), cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    seconds, warned, backends = lines["child"].split()
    assert float(seconds) < 5 and int(warned) >= 1 and backends == "0"
    assert "not everything was delivered" not in result.stderr and "backend  state" not in result.stdout
    assert lines["parent"] == "True"
    (run_dir,) = (tmp_path / "runs" / "forked").iterdir()
    entries = list(read_journal(run_dir / "journal.jsonl"))
    assert not [entry for entry in entries if "child" in entry.get("values", {})]
    assert [entry["type"] for entry in entries].count("finish") == 1  # only the parent closed the journal
    figures = tally("fork (os.fork + fork pool)", "jsonl", range(100), _steps(run_dir / "journal.jsonl"))
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


# -- 3. on_error="raise" -------------------------------------------------------------------------------------


def test_raising_reports_a_past_failure_without_costing_the_current_record(memory, tmp_path):
    register_tracker_class(FailingTracker)
    run = Dispatcher(log_with=["jsonl", "failing"], logging_dir=tmp_path, on_error="raise")
    run.init_trackers("p")
    run.log({"a": 0.0}, step=0)
    with pytest.raises(TrackingError):
        run.flush()
    for step in range(1, 4):
        try:
            run.log({"a": float(step)}, step=step)
        except TrackingError:
            pass
    with pytest.raises(TrackingError):
        run.finish()
    report = run.state.report
    assert report is not None
    journal = _steps(run.run_dir / "journal.jsonl")
    spilled = waiting_steps(run.run_dir, "failing")
    for backend, stored, spill in (("jsonl", journal, []), ("failing", [], spilled)):
        figures = tally("on_error='raise'", backend, range(4), stored, spill)
        assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


# -- 4. a batch that fails part-way ------------------------------------------------------------------------


class Flaky(MemoryTracker):
    """Stores part of a batch and then fails, like an SDK writing in chunks to a server that died."""

    name = "flaky"
    fail_after: int | None = None  # entries stored before the next log_batch fails
    refuse: set = set()  # keys whose values the "SDK" refuses with a ValueError
    gate = threading.Event()  # start() waits for it: records pile up into one big batch

    def start(self):
        Flaky.gate.wait(5)
        super().start()

    def log(self, values, step=None, **kwargs):
        bad = self.refuse & set(values)
        if bad:
            raise ValueError(f"invalid value for {sorted(bad)}")
        super().log(values, step)

    def log_batch(self, entries):
        for index, (values, step, _kwargs) in enumerate(entries):
            if Flaky.fail_after is not None and index == Flaky.fail_after:
                Flaky.fail_after = None
                raise PartialDelivery(index) from ConnectionError("connection reset")
            try:
                self.log(values, step)
            except Exception as error:
                raise PartialDelivery(index) from error


def _memory_steps(tracker: MemoryTracker, key: str) -> list[int]:
    return [step for step, values in tracker.metrics if key in values]


def test_a_batch_that_fails_part_way_is_stored_exactly_once(memory, tmp_path):
    register_tracker_class(Flaky)
    Flaky.fail_after, Flaky.refuse = 7, set()
    Flaky.gate.clear()
    run = Dispatcher(log_with="flaky", logging_dir=tmp_path, retry_backoff=(0.05, 0.2))
    run.init_trackers("p")
    for step in range(50):
        run.log({"loss": float(step)}, step=step)
    Flaky.gate.set()
    report = run.finish()
    stored = _memory_steps(MemoryTracker.runs[-1], "loss")
    # the rest of the batch waited (the connection failed) and was recovered: nothing is owed
    assert waiting_steps(run.run_dir, "flaky") == []
    figures = tally("batch fails part-way", "flaky", range(50), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert stored == list(range(50))  # and in order
    backend = report.backends["flaky"]
    assert backend.delivered == 50 and backend.spilled == 0 and backend.recovered == 43, str(report)
    assert backend.errors == 1 and report.ok, str(report)


def test_a_backend_stuck_retrying_part_of_a_batch_loses_nothing_at_the_finish_timeout(
    memory, tmp_path, monkeypatch, request
):
    # The backend stores the first record of a batch and refuses a value in the rest; the retry of the
    # rest (each record while the refused value is looked for) hangs. The finish timeout then has to
    # spill what that retry still owes, not only what is queued behind it.
    register_tracker_class(StuckOnRetryTracker)
    monkeypatch.setattr(StuckOnRetryTracker, "refuses", True)
    monkeypatch.setattr(StuckOnRetryTracker, "stored", [])
    monkeypatch.setattr(StuckOnRetryTracker, "go", threading.Event())
    monkeypatch.setattr(StuckOnRetryTracker, "release", threading.Event())
    request.addfinalizer(StuckOnRetryTracker.release.set)  # lets the stuck call return after the test
    run = Dispatcher(log_with=["stuck-on-retry"], logging_dir=tmp_path)
    run.init_trackers("p")
    for step in range(20):
        run.log({"x": float(step)}, step=step)
    StuckOnRetryTracker.go.set()
    report = run.finish(timeout=1.0)
    stuck = report.backends["stuck-on-retry"]
    assert stuck.state == "timed_out"
    spilled = waiting_steps(run.run_dir, "stuck-on-retry")
    figures = tally(
        "batch fails part-way, its retry hangs past the finish timeout",
        "stuck-on-retry",
        range(20),
        StuckOnRetryTracker.stored,
        spilled,
    )
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert StuckOnRetryTracker.stored == [0] and sorted(spilled) == list(range(1, 20))
    assert stuck.delivered == 1 and stuck.spilled == 19


def test_a_refused_value_costs_only_itself(memory, tmp_path):
    register_tracker_class(Flaky)
    Flaky.fail_after, Flaky.refuse = None, {"bad"}
    Flaky.gate.set()
    run = Dispatcher(log_with="flaky", logging_dir=tmp_path)
    run.init_trackers("p")
    with pytest.warns(Warning, match="refused by the backend"):
        for step in range(20):
            values = {f"m{index}": float(step) for index in range(40)}
            if step == 5:
                values["bad"] = 1.0
            run.log(values, step=step)
        report = run.finish()
    tracker = MemoryTracker.runs[-1]
    assert _memory_steps(tracker, "m39") == list(range(20)) and _memory_steps(tracker, "m0") == list(range(20))
    assert not _memory_steps(tracker, "bad")
    assert "bad" in report.backends["flaky"].skipped_values and report.backends["flaky"].spilled == 0
    assert "refused" in str(report)


# -- 5. a backend that goes away and comes back ---------------------------------------------------------------


class Outage(MemoryTracker):
    """Down while ``down`` is set, as a server is while it restarts."""

    name = "outage"
    down = threading.Event()

    def log(self, values, step=None, **kwargs):
        if Outage.down.is_set():
            raise ConnectionError("connection refused")
        super().log(values, step)


def test_a_backend_that_comes_back_gets_its_spill_in_order_then_live_records(memory, tmp_path):
    register_tracker_class(Outage)
    run = Dispatcher(log_with=["outage", "jsonl"], logging_dir=tmp_path, retry_backoff=(0.05, 0.4))
    run.init_trackers("p")
    for step in range(300):
        if step == 50:
            Outage.down.set()
        if step == 200:
            Outage.down.clear()
        run.log({"loss": float(step)}, step=step)
        time.sleep(0.002)
    report = run.finish()
    stored = _memory_steps(MemoryTracker.runs[-1], "loss")
    figures = tally("backend down 1/2 of the run", "outage", range(300), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert stored == list(range(300))
    backend = report.backends["outage"]
    assert backend.state == "finished" and backend.recovered > 0 and backend.spilled == 0 and report.ok
    assert any("recovered" in note for note in backend.notes), backend.notes
    progress = json.loads((run.run_dir / "run.json").read_text())["progress"]["outage"]
    assert progress == {"seq": 299, "step": 299}
    from tracking_core.cli.runs import describe_run

    assert "spilled" not in describe_run(run.run_dir).backends["outage"]  # its spill owes nothing any more


# -- 6. replay into the original run -----------------------------------------------------------------------------


def test_replay_completes_the_original_run_once_and_never_becomes_the_resumed_run(memory, tmp_path):
    register_tracker_class(Outage)
    Outage.down.set()
    run = Dispatcher(log_with=["outage", "jsonl"], logging_dir=tmp_path, retry_backoff=(30, 30))
    run.init_trackers("p", config={"lr": 0.1})
    for step in range(40):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=5)
    assert report.backends["outage"].spilled == 40 and report.backends["outage"].delivered == 1  # the config
    from tracking_core.cli.runs import describe_run

    assert describe_run(run.run_dir).backends["outage"].endswith(", 40 owed")
    assert waiting_steps(run.run_dir, "outage") == list(range(40))  # in the run's journal, past its cursor
    Outage.down.clear()
    first = replay(run.run_dir, "outage", progress=False)
    second = replay(run.run_dir, "outage", progress=False)  # nothing left to deliver
    assert first.ok and second.ok
    assert "owed" not in describe_run(run.run_dir).backends["outage"]  # the replay delivered what it owed
    stored = [step for tracker in MemoryTracker.runs[1:] for step in _memory_steps(tracker, "loss")]
    figures = tally("replay twice into the original run", "outage", range(40), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    copy = replay(run.run_dir, "memory", progress=False, new_run=True)
    assert copy.ok
    resumed = Dispatcher(log_with="jsonl", logging_dir=tmp_path, resume=True)
    resumed.init_trackers("p")
    assert resumed.run_id == run.run_id  # not the replay's copy
    resumed.finish()


# -- 7. killed with SIGKILL, resumed -------------------------------------------------------------------------------

KILLED = """
import sys, time, tracking_core
run = tracking_core.init("killed", log_with=["jsonl"], logging_dir=sys.argv[1], resume=sys.argv[2] == "resume")
first = run.state.step + 1
for step in range(first, int(sys.argv[3])):
    run.log({"loss": 1.0 / (step + 1)})
    if step == first + 150:
        print("ready", flush=True)
    time.sleep(0.002)
run.finish()
print("done", first, flush=True)
"""


def test_a_killed_job_resumes_after_the_last_durable_step(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED), str(tmp_path / "runs"), "new", "100000"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    time.sleep(1.3)  # past a background flush
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    (run_dir,) = (tmp_path / "runs" / "killed").iterdir()
    written = _steps(run_dir / "journal.jsonl")
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["last_step"] >= 150, manifest  # the background flush recorded it, not only finish()
    target = len(written) + 200
    result = run_script(KILLED, str(tmp_path / "runs"), "resume", str(target), cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == str(len(written))  # carried on right after the last written step
    figures = tally("SIGKILL, then resume=True", "jsonl", range(target), _steps(run_dir / "journal.jsonl"))
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


# -- 8. disk faults --------------------------------------------------------------------------------------------------

FULL_DISK = """
import resource, signal, sys, tracking_core
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead of killing us
run = tracking_core.init("full", log_with=["jsonl"], logging_dir=sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
for step in range(3000):
    run.log({"loss": 1.0 / (step + 1), "note": "x" * 40})
    if step % 100 == 99:
        run.flush()
report = run.finish()
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
b = report.backends["jsonl"]
print(b.state, b.delivered, b.spilled, b.dropped, flush=True)
"""


def test_a_full_disk_spills_exactly_what_the_journal_could_not_store(tmp_path):
    limit = 300 * 1024  # the journal passes it about two thirds into the run; the spill (a new file) stays under it
    result = run_script(FULL_DISK, str(tmp_path / "runs"), str(limit), cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    state, delivered, spilled, dropped = result.stdout.split()
    (run_dir,) = (tmp_path / "runs" / "full").iterdir()
    journal, spill = _steps(run_dir / "journal.jsonl"), _steps(run_dir / "spill-jsonl.jsonl")
    assert (run_dir / "journal.jsonl").stat().st_size <= limit
    figures = tally("disk full (RLIMIT_FSIZE)", "jsonl", range(3000), journal, spill)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert int(dropped) == 0 and int(delivered) == len(journal) and int(spilled) == len(spill) > 0, result.stdout
    assert state == "quarantined"


def test_a_deleted_run_folder_is_not_reported_as_delivered(tmp_path):
    import shutil

    run = Dispatcher(log_with="jsonl", logging_dir=tmp_path)
    run.init_trackers("p")
    for step in range(20):
        run.log({"a": float(step)}, step=step)
    run.flush()
    shutil.rmtree(run.run_dir)
    for step in range(20, 40):
        run.log({"a": float(step)}, step=step)
    report = run.finish()
    backend = report.backends["jsonl"]
    assert not report.ok and backend.delivered == 20 and backend.spilled == 20, str(report)
    figures = tally("run folder deleted mid-run", "jsonl", range(20, 40), [], _steps(run.run_dir / "spill-jsonl.jsonl"))
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


def test_the_flush_interval_is_one_second_and_configurable(tmp_path):
    assert Dispatcher().options.flush_interval == 1.0
    with pytest.raises(ValueError, match="flush_interval"):
        Dispatcher(flush_interval=0)


# -- 9. when the dispatcher flushes ---------------------------------------------------------------------------


class SlowToStart(MemoryTracker):
    """Buffers until flush, and takes longer to start than the flush interval, as W&B or MLflow do."""

    name = "slow-to-start"

    def start(self):
        time.sleep(1.1)
        super().start()


def test_the_flush_clock_starts_when_the_backend_is_ready(memory, tmp_path):
    register_tracker_class(SlowToStart)
    run = Dispatcher(log_with="slow-to-start", logging_dir=tmp_path, flush_interval=1.0)
    run.init_trackers("p")
    for step in range(10):
        run.log({"loss": float(step)}, step=step)
    tracker = MemoryTracker.runs[-1]
    deadline = time.monotonic() + 10
    while len(tracker.metrics) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    # The records waited for start-up, not for a flush: the first one is due a second after start.
    assert tracker.flushes == 0
    report = run.finish()
    assert tracker.flushes == 1 and report.backends["slow-to-start"].delivered == 10


class WritesAtFinish(MemoryTracker):
    """Its finish() waits until the SDK's writer has everything, as W&B's does."""

    name = "writes-at-finish"
    durable_at_finish = True
    finish_fails = False

    def finish(self):
        super().finish()
        if self.finish_fails:
            raise OSError("the SDK's writer is gone")

    def flush(self):
        if self.finished and self.finish_fails:  # asked to settle after the failure: nothing answers
            raise OSError("the SDK's writer is gone")
        super().flush()


@pytest.mark.parametrize("finish_fails", [False, True])
def test_a_backend_whose_finish_makes_everything_durable_is_not_flushed_first(memory, tmp_path, finish_fails):
    register_tracker_class(WritesAtFinish)
    WritesAtFinish.finish_fails = finish_fails
    run = Dispatcher(log_with="writes-at-finish", logging_dir=tmp_path, flush_interval=60.0)
    run.init_trackers("p")
    for step in range(10):
        run.log({"loss": float(step)}, step=step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = run.finish()
    tracker = MemoryTracker.runs[-1]
    backend = report.backends["writes-at-finish"]
    assert tracker.flushes == 0 and tracker.finished == 1
    spilled = waiting_steps(run.run_dir, "writes-at-finish")
    if finish_fails:  # nothing confirms them: every record waits for `tracking replay`
        assert backend.state == "finish_failed" and backend.delivered == 0 and spilled == list(range(10))
    else:
        assert backend.state == "finished" and backend.delivered == 10 and spilled == []


# -- a backend whose SDK is missing at start --------------------------------------------------------------


class MissingSdk(MemoryTracker):
    """Its start imports an SDK that is not installed, as after ``pip uninstall`` of the backend's SDK."""

    name = "missing-sdk"
    starts = 0

    def start(self):
        MissingSdk.starts += 1
        raise ModuleNotFoundError("No module named 'somesdk'", name="somesdk")


def test_a_missing_sdk_at_start_is_not_retried_and_the_warning_says_how_to_deliver_later(memory, tmp_path, caplog):
    register_tracker_class(MissingSdk)
    MissingSdk.starts = 0
    caplog.set_level("WARNING", logger="tracking_core")
    run = Dispatcher(log_with=["jsonl", "missing-sdk"], logging_dir=tmp_path, retry_backoff=(0.01, 0.02))
    run.init_trackers("p")
    for step in range(20):
        run.log({"loss": float(step)}, step=step)
    report = run.finish()
    backend = report.backends["missing-sdk"]
    assert MissingSdk.starts == 1 and backend.state == "start_failed", str(report)
    figures = tally("SDK missing at start", "missing-sdk", range(20), [], waiting_steps(run.run_dir, "missing-sdk"))
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    warned = [
        record.getMessage() for record in caplog.records if "'missing-sdk' failed in start" in record.getMessage()
    ]
    assert len(warned) == 1, warned
    # not retried, so the warning must not promise delivery "when it answers again"; it names what does deliver
    assert "answers again" not in warned[0], warned[0]
    assert f"install it, then `tracking replay {run.run_dir} --to missing-sdk`" in warned[0], warned[0]
