"""A restarted job continues its run: same folder and id, backends reopened, steps carried on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from tracking_core import Dispatcher, register_tracker_class
from tracking_core.store.journal import JournalSummary
from tracking_core.store.manifest import MANIFEST_NAME
from tracking_core.testing import MemoryTracker
from tracking_core.testing.reliability import tally

from .helpers import logged_without_waiting


class ResumableMemory(MemoryTracker):
    """Stands for an SDK with run ids: it hands out its id and reopens the run it is given."""

    name = "resumable"

    def start(self) -> None:
        super().start()
        resume = self.run_context.resume if self.run_context else None
        self.sdk_run_id = resume["sdk_run_id"] if resume else f"sdk-{os.urandom(3).hex()}"

    def resume_state(self) -> dict:
        return {"sdk_run_id": self.sdk_run_id}


@pytest.fixture
def trackers(memory):
    register_tracker_class(ResumableMemory)
    return ["jsonl", "memory", "resumable"]


def run_steps(tmp_path, trackers, steps, **options):
    run = Dispatcher(log_with=trackers, logging_dir=tmp_path, **options)
    run.init_trackers("proj", config={"lr": 0.1})
    for _ in range(steps):
        run.log({"loss": 1.0})
    return run, run.finish()


def test_resume_continues_the_latest_run(trackers, tmp_path):
    first, _ = run_steps(tmp_path, trackers, 5)
    manifest = json.loads((first.run_dir / MANIFEST_NAME).read_text())
    assert manifest["last_step"] == 4 and manifest["run_id"] == first.run_id
    assert manifest["backends"]["jsonl"] == {"journal": "journal.jsonl"} and manifest["backends"]["memory"] is None
    sdk_run_id = manifest["backends"]["resumable"]["sdk_run_id"]

    second, report = run_steps(tmp_path, trackers, 5, resume=True)
    assert second.resumed and (second.run_id, second.run_dir) == (first.run_id, first.run_dir)
    resumable = next(t for t in second.trackers if t.name == "resumable")
    assert resumable.sdk_run_id == sdk_run_id, "the backend did not get its earlier state back"
    assert resumable.series("loss") == {step: 1.0 for step in range(5, 10)}, "step=None did not carry on"
    assert any("not resumed" in note for note in report.backends["memory"].notes), report.backends["memory"].notes
    assert not report.backends["resumable"].notes
    journal = JournalSummary(first.run_dir)
    assert [step for step, _ in journal.metrics["loss"]] == list(range(10)) and journal.finished
    assert journal.counts["resume"] == 1 and journal.counts["header"] == 1
    assert len(list((tmp_path / "proj").iterdir())) == 1, "resuming created another run folder"


@pytest.mark.parametrize("delivery", ["thread", "process"])
def test_a_resumed_run_keeps_each_backends_last_step_until_it_delivers_more(trackers, tmp_path, delivery):
    """The cursor's step comes back with its seq: a resumed run that logs nothing does not record -1."""
    first, _ = run_steps(tmp_path, ["jsonl"], 5)
    run_steps(tmp_path, ["jsonl"], 0, resume=True, delivery=delivery)
    progress = json.loads((first.run_dir / MANIFEST_NAME).read_text())["progress"]["jsonl"]
    assert progress == {"seq": 6, "step": 4}, progress  # seqs 0 and 6: each process's config
    cursor_file = (first.run_dir / ".cursor-jsonl").read_bytes().split()
    assert [int(field) for field in cursor_file] == [6, 4, 6, 4]


def test_resume_by_id_and_the_most_recently_used_run(trackers, tmp_path):
    older, _ = run_steps(tmp_path, trackers, 2)
    time.sleep(0.01)
    newer, _ = run_steps(tmp_path, trackers, 2)
    again, _ = run_steps(tmp_path, trackers, 1, resume=older.run_id)
    assert again.run_id == older.run_id
    latest, _ = run_steps(tmp_path, trackers, 1, resume=True)
    assert latest.run_id == older.run_id != newer.run_id, "resume=True should take the run used last"


def test_resume_errors_and_fresh_starts(trackers, tmp_path):
    fresh, _ = run_steps(tmp_path, trackers, 1, resume=True)  # nothing to resume yet: a new run
    assert not fresh.resumed and (fresh.run_dir / MANIFEST_NAME).is_file()
    with pytest.raises(FileNotFoundError, match=rf"no run 'missing'.*{fresh.run_id}"):
        Dispatcher(log_with=trackers, logging_dir=tmp_path, resume="missing").init_trackers("proj")
    with pytest.raises(ValueError, match="resume must be"):
        Dispatcher(log_with=trackers, logging_dir=tmp_path, resume=1)


def test_resume_after_the_process_was_killed(tmp_path):
    """SIGKILL after a flush, with a half-written journal line: the next process picks up cleanly."""
    script = textwrap.dedent(
        """
        import os, signal, sys
        import tracking_core
        run = tracking_core.init("proj", log_with="jsonl", logging_dir=sys.argv[1])
        for step in range(10):
            run.log({"loss": float(step)})
        assert run.flush(timeout=30)
        journal = run.trackers[0].journal_path
        with open(journal, "a") as handle:
            handle.write('{"type":"metrics","step":10,"val')  # killed mid-write
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    killed = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert killed.returncode == -9, killed.stderr
    run = Dispatcher(log_with="jsonl", logging_dir=tmp_path, resume=True)
    run.init_trackers("proj")
    run.log({"loss": 10.0})
    assert run.finish().ok
    journal = JournalSummary(run.run_dir)
    assert journal.metrics["loss"] == [(step, float(step)) for step in range(11)]
    assert journal.finished and journal.counts["resume"] == 1, journal.counts  # nothing glued to the torn line


FILE_STORE = '''
import json, os, signal, time
from pathlib import Path
from tracking_core import GeneralTracker, PartialDelivery


class FileStore(GeneralTracker):
    """Writes every point before its call returns, as MLflow and TensorBoard do; reads them back."""

    name = "file-store"
    requires_logging_directory = False

    def __init__(self, run_name="file-store", **kwargs):
        super().__init__()
        self.run_name = run_name

    @property
    def tracker(self):
        return self

    @property
    def path(self):
        return Path(self.run_context.run_dir) / "file-store.jsonl"

    fail_starts = 0  # how many start() calls fail first, as with a server that is not up yet

    def start(self):
        if FileStore.fail_starts > 0:
            FileStore.fail_starts -= 1
            raise ConnectionError("connection refused")
        if int(os.environ.get("FILE_STORE_FAIL_BATCH_AT", "-1")) >= 0:
            # every record in the first batch: wait until the journal has all 100
            journal = Path(self.run_context.run_dir) / "journal.jsonl"
            deadline = time.monotonic() + 30
            while not (journal.is_file() and '"step":99,' in journal.read_text()) and time.monotonic() < deadline:
                time.sleep(0.01)

    def resume_state(self):
        return {"file": str(self.path)}

    release = None  # a test's threading.Event: log_batch waits for it (a call stuck on a dead connection)
    fail_on_call = None  # the log_batch call (1 = the first) that fails, as a server that went away would
    calls = 0
    failed_at_step = False

    def log_batch(self, entries):
        FileStore.calls += 1
        if FileStore.release is not None:
            FileStore.release.wait(60)
        hang = Path(self.run_context.run_dir) / "hang-once"
        try:
            hang.unlink()  # whichever process takes this call first hangs in it (another process's test can kill it)
        except FileNotFoundError:
            pass
        else:
            time.sleep(60)
        if FileStore.calls == FileStore.fail_on_call:
            raise ConnectionError("connection reset")
        # FILE_STORE_FAIL_BATCH_AT: the first batch that reaches that step fails there, after storing the
        # entries before it; the rest waits in the spill, and the retry that delivers it starts at that
        # step (where FILE_STORE_DIE_AT then kills the process)
        fail_at = int(os.environ.get("FILE_STORE_FAIL_BATCH_AT", "-1"))
        for index, (values, step, kwargs) in enumerate(entries):
            if step == fail_at and not FileStore.failed_at_step:
                FileStore.failed_at_step = True
                raise PartialDelivery(index) from ConnectionError("connection reset")
            self.log(values, step=step, **kwargs)

    def store_init_configuration(self, values):
        pass

    def log(self, values, step=None, **kwargs):
        with open(self.path, "a") as handle:
            handle.write(json.dumps({"step": step, **values}) + "\\n")
        die_at = int(os.environ.get("FILE_STORE_DIE_AT", "-1"))
        if die_at >= 0 and step >= die_at:
            # Stored, and the process dies before the call returns: once the journal holds every step,
            # so the resumed run has all it needs to catch up from.
            journal = Path(self.run_context.run_dir) / "journal.jsonl"
            deadline = time.monotonic() + 30
            last = int(os.environ.get("FILE_STORE_JOURNAL_HOLDS", die_at + 50))
            while f'"step":{last},' not in journal.read_text() and time.monotonic() < deadline:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGKILL)

    def read_back_history(self):
        history = {}
        if self.path.is_file():
            for line in self.path.read_text().splitlines():
                point = json.loads(line)
                step = point.pop("step")
                for key, value in point.items():
                    history.setdefault(key, []).append((step, value))
        return history
'''


@pytest.mark.parametrize("call", ["batch", "retry"])
def test_a_call_that_stored_its_points_when_the_process_died_is_not_repeated(tmp_path, monkeypatch, call):
    """SIGKILL inside the SDK call, after the backend wrote the points and before the call returned: the
    cursor file could not say so. The resumed run asks the backend's storage and delivers only the rest.

    ``retry``: the call is the retry that starts at the record a batch failed on (a connection error),
    after the batch stored the records before it."""
    fail_at = "40" if call == "retry" else "-1"
    _killed_inside_the_backend(tmp_path, monkeypatch, 100, die_at=40, FILE_STORE_FAIL_BATCH_AT=fail_at)
    run = Dispatcher(log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True)
    run.init_trackers("proj")
    for step in range(run.state.step + 1, 120):
        run.log({"loss": float(step)}, step=step)
    report = run.finish()
    steps = [step for step, _ in run.get_tracker("file-store").read_back_history()["loss"]]
    assert steps == list(range(120))
    assert report.ok, str(report)


def test_a_call_found_stored_by_one_resume_is_not_delivered_again_by_the_next(tmp_path, monkeypatch):
    """Killed inside the backend's last call, after it stored every point of it: the resumed run finds them
    in the backend's storage and delivers none, so its cursor never passes them. The process after it
    must still know they were handed over (and ask the storage again), or it stores them a second time."""
    steps = 100
    _killed_inside_the_backend(tmp_path, monkeypatch, steps, die_at=steps - 1, FILE_STORE_JOURNAL_HOLDS=str(steps - 1))
    for _ in range(2):
        run = Dispatcher(log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True)
        run.init_trackers("proj")
        report = run.finish(timeout=60)
        assert report.backends["file-store"].ok and report.backends["file-store"].delivered == 0, str(report)
    figures = tally("a call found stored, then two resumes", "file-store", range(steps), _stored_steps(run))
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


def _killed_inside_the_backend(tmp_path, monkeypatch, steps: int, die_at: int, **environment: str):
    """A first process that logs ``steps`` and is killed inside the file store's call at ``die_at``; returns
    the file store's class, registered for the resumed run."""
    (tmp_path / "file_store.py").write_text(FILE_STORE)
    monkeypatch.syspath_prepend(str(tmp_path))
    script = textwrap.dedent(
        f"""
        import sys
        import tracking_core
        from file_store import FileStore
        tracking_core.register_tracker_class(FileStore)
        run = tracking_core.init("proj", log_with=["file-store", "jsonl"], logging_dir=sys.argv[1])
        for step in range({steps}):
            run.log({{"loss": float(step)}}, step=step)
        run.flush(timeout=60)
        """
    )
    killed = _run_with_the_file_store(tmp_path, script, FILE_STORE_DIE_AT=str(die_at), **environment)
    assert killed.returncode == -9, killed.stderr
    from file_store import FileStore

    register_tracker_class(FileStore)
    monkeypatch.setattr(FileStore, "calls", 0)
    return FileStore


def _run_with_the_file_store(tmp_path, script: str, **environment: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (logging to ``tmp_path/runs``) in a process that can import the file store."""
    python_path = f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    return subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": python_path, **environment},
    )


def _killed_with_records_left_in_the_journal(tmp_path, monkeypatch, steps: int):
    """Killed at step 5 once the journal holds all ``steps``: the resumed run catches up on the rest."""
    return _killed_inside_the_backend(tmp_path, monkeypatch, steps, die_at=5, FILE_STORE_JOURNAL_HOLDS=str(steps - 1))


def _stored_steps(run) -> list[int]:
    return [json.loads(line)["step"] for line in (run.run_dir / "file-store.jsonl").read_text().splitlines()]


def test_a_catch_up_cut_short_by_the_finish_timeout_leaves_what_it_owes_in_the_journal(tmp_path, monkeypatch):
    """A resumed backend catching up from the journal on more than one batch, stuck in its first call at
    the finish timeout: what it has not stored stays in the run's journal past its cursor (nothing is
    copied to a spill), the report counts it as waiting, and the next process delivers it: every record
    once, the batches the catch-up never read included."""
    steps = 1500  # the catch-up takes 1,000 records a batch
    file_store = _killed_with_records_left_in_the_journal(tmp_path, monkeypatch, steps)
    monkeypatch.setattr(file_store, "release", threading.Event())
    run = Dispatcher(log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True)
    run.init_trackers("proj")
    try:
        report = run.finish(timeout=1.0)
    finally:
        file_store.release.set()  # the stuck call returns and stores its batch: the cursor file says so
    entry = report.backends["file-store"]
    assert entry.state == "timed_out", str(report)
    assert entry.spilled == steps - 6 and entry.spill_path is None, str(report)  # waiting in the journal
    for thread in threading.enumerate():
        if thread.name == "tracking-file-store":
            thread.join(30)  # the abandoned worker, once its call stored the batch
    again = Dispatcher(log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True)
    again.init_trackers("proj")
    assert again.finish(timeout=60).ok
    figures = tally(
        "resumed catch-up cut short by the finish timeout, then resumed", "file-store", range(steps), _stored_steps(run)
    )
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


@pytest.mark.parametrize("steps", [1500, 2500], ids=["failing-on-the-last-batch", "batches-left-after-the-failure"])
def test_a_backend_that_fails_during_its_catch_up_gets_every_record_once_when_it_is_back(tmp_path, monkeypatch, steps):
    """Live records wait while a resumed backend catches up; when the backend then fails, what the catch-up
    still owes (the batch it failed on and the batches not read yet) is read again from the cursor when the
    backend is back, ahead of them (only the live records count as recovered: nothing of the catch-up was
    spilled)."""
    live = 100
    file_store = _killed_with_records_left_in_the_journal(tmp_path, monkeypatch, steps)
    monkeypatch.setattr(file_store, "release", threading.Event())  # holds the first catch-up call
    monkeypatch.setattr(file_store, "fail_on_call", 2)  # the second catch-up batch meets a dead server
    run = Dispatcher(
        log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True, retry_backoff=(0.05, 0.2)
    )
    run.init_trackers("proj")
    for step in range(steps, steps + live):  # logged while the first catch-up batch is in the SDK: spilled
        run.log({"loss": float(step)}, step=step)
    file_store.release.set()
    deadline = time.monotonic() + 60
    while file_store.calls < 3 and time.monotonic() < deadline:  # failed, then retried from the spill
        time.sleep(0.01)
    report = run.finish(timeout=60)
    entry = report.backends["file-store"]
    assert entry.ok and entry.errors == 1 and entry.recovered == live and entry.spilled == 0, str(report)
    figures = tally(
        "backend fails during its catch-up, then answers", "file-store", range(steps + live), _stored_steps(run)
    )
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert _stored_steps(run) == list(range(steps + live))  # and in order


@pytest.mark.parametrize("live", [50, 0], ids=["records-logged-meanwhile", "nothing-logged-meanwhile"])
def test_a_backend_that_cannot_start_at_resume_catches_up_once_it_does(tmp_path, monkeypatch, live):
    """The server is not up yet when the job restarts: the backend's start fails and the new records are
    spilled. When a retry gets it started, it first catches up from the journal on what the killed
    process had not delivered, then takes the spill."""
    steps = 300
    file_store = _killed_with_records_left_in_the_journal(tmp_path, monkeypatch, steps)
    monkeypatch.setattr(file_store, "fail_starts", 1)
    run = Dispatcher(
        log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True, retry_backoff=(0.05, 0.2)
    )
    run.init_trackers("proj")
    for step in range(steps, steps + live):
        run.log({"loss": float(step)}, step=step)
    deadline = time.monotonic() + 60
    while steps + live - 1 not in _stored_steps(run) and time.monotonic() < deadline:  # started on a retry
        time.sleep(0.01)
    report = run.finish(timeout=60)
    assert report.backends["file-store"].ok, str(report)
    stored = _stored_steps(run)
    figures = tally("backend cannot start at resume, then does", "file-store", range(steps + live), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert stored == list(range(steps + live))  # the journal's records before the new ones


def test_a_delivery_process_that_dies_during_a_resumed_catch_up_loses_nothing(tmp_path, monkeypatch):
    """The delivery process dies while a resumed backend catches up from the journal: the backend goes on
    in a thread here, and catches up from the journal as well as from what the training process kept."""
    steps, live = 1500, 100
    _killed_with_records_left_in_the_journal(tmp_path, monkeypatch, steps)
    (run_dir,) = [path.parent for path in (tmp_path / "runs").glob("proj/*/run.json")]
    (run_dir / "hang-once").touch()
    run = Dispatcher(log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True, delivery="process")
    run.init_trackers("proj")
    deadline = time.monotonic() + 60
    while (run_dir / "hang-once").exists() and time.monotonic() < deadline:  # the catch-up's first call
        time.sleep(0.01)
    assert run.state.link is not None
    os.kill(run.state.link.process.pid, signal.SIGKILL)
    for step in range(steps, steps + live):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=60)
    assert report.backends["file-store"].ok, str(report)
    stored = _stored_steps(run)
    figures = tally("delivery process killed during a resumed catch-up", "file-store", range(steps + live), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


def test_a_resumed_backend_stuck_in_its_catch_up_does_not_hold_up_the_loop(tmp_path, monkeypatch, request):
    """The first call of a resumed backend's catch-up hangs while the loop logs 20x its queue: the live
    records go to its spill (the catch-up stays with the worker), and once the call returns the backend
    gets the journal's records, then the spill's, each once and in order."""
    from tracking_core.delivery import worker

    steps, live = 1500, 1000
    file_store = _killed_with_records_left_in_the_journal(tmp_path, monkeypatch, steps)
    monkeypatch.setattr(file_store, "release", threading.Event())
    request.addfinalizer(file_store.release.set)
    monkeypatch.setattr(worker, "SPILL_OVER_SECONDS", 0.2)
    run = Dispatcher(log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True, queue_size=50)
    run.init_trackers("proj")
    assert logged_without_waiting(run, range(steps, steps + live), "loss"), "log() waited for the stuck catch-up call"
    file_store.release.set()
    report = run.finish(timeout=60)
    entry = report.backends["file-store"]
    stored = _stored_steps(run)
    figures = tally("resumed backend stuck in its catch-up, then answers", "file-store", range(steps + live), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert entry.ok and stored == list(range(steps + live)), str(report)
    assert any("did not return" in note for note in entry.notes), str(report)


def test_records_spilled_over_from_a_stuck_backend_survive_a_kill(tmp_path, monkeypatch):
    """The backend's call hangs, the loop goes on (its records are spilled over), and the process is
    SIGKILLed while the call still hangs: the resumed run gets the backend every record once, in order,
    from the journal (and its spill, had the journal been behind)."""
    steps = 1000
    (tmp_path / "file_store.py").write_text(FILE_STORE)
    monkeypatch.syspath_prepend(str(tmp_path))
    script = textwrap.dedent(
        f"""
        import os, signal, sys, time
        import tracking_core
        from tracking_core.delivery import worker
        from file_store import FileStore
        worker.SPILL_OVER_SECONDS = 0.2
        tracking_core.register_tracker_class(FileStore)
        run = tracking_core.init("proj", log_with=["file-store", "jsonl"], logging_dir=sys.argv[1], queue_size=50)
        (run.run_dir / "hang-once").touch()  # the backend's next call hangs for a minute
        for step in range({steps}):
            run.log({{"loss": float(step)}}, step=step)
        journal = run.run_dir / "journal.jsonl"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and '"step":{steps - 1},' not in journal.read_text():
            time.sleep(0.01)  # the records the stuck backend owes wait in the journal
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    killed = _run_with_the_file_store(tmp_path, script)
    assert killed.returncode == -9, killed.stderr
    assert "its records wait (in the run's journal)" in killed.stderr  # the loop did not wait for the call
    from file_store import FileStore

    register_tracker_class(FileStore)
    run = Dispatcher(log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True)
    run.init_trackers("proj")
    report = run.finish(timeout=60)
    stored = _stored_steps(run)
    figures = tally(
        "SIGKILL while a stuck backend's records were spilled over, then resume", "file-store", range(steps), stored
    )
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert report.backends["file-store"].ok and stored == list(range(steps)), str(report)


def test_a_kill_inside_the_journal_s_write_resumes_after_its_last_written_step(tmp_path):
    """The journal's cursor file names the records of a write before it makes it; killed inside that write,
    the lines are not in the journal (a torn one is cut on reopening). The resumed run carries on after the
    journal's last written step, not after the handed one, which would leave a gap of steps nobody holds."""
    from tracking_core.store.cursor import CursorFile, cursor_name

    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path)
    run.init_trackers("proj")
    for step in range(10):
        run.log({"loss": float(step)}, step=step)
    run.finish()
    cursor = CursorFile(run.run_dir / cursor_name("jsonl"))
    cursor.write(10, 9, 16, 15)  # handed steps 10..15 to a write that the kill cut short
    cursor.close()
    resumed = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path, resume=True)
    resumed.init_trackers("proj")
    assert resumed.state.step == 9
    resumed.finish()


def test_a_buffering_backend_that_caught_up_gets_the_records_logged_meanwhile_once(tmp_path, monkeypatch):
    """A backend that confirms at its flush (W&B, ClearML, ...) catches up from the journal while the resumed
    job logs: the records logged meanwhile wait, and are read after what the catch-up handed over, not from
    its cursor, which its next flush moves (reading from it would deliver the catch-up a second time)."""
    steps, live = 1500, 300
    file_store = _killed_with_records_left_in_the_journal(tmp_path, monkeypatch, steps)
    monkeypatch.setattr(file_store, "durable_on_return", False)  # what it took counts once flush() returns
    monkeypatch.setattr(file_store, "flush", lambda self: None, raising=False)
    run = Dispatcher(log_with=["file-store", "jsonl"], logging_dir=tmp_path / "runs", resume=True, flush_interval=60.0)
    run.init_trackers("proj")
    for step in range(run.state.step + 1, steps + live):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=60)
    stored = _stored_steps(run)
    figures = tally(
        "a buffering backend catches up while the resumed job logs", "file-store", range(steps + live), stored
    )
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert stored == list(range(steps + live)) and report.ok, str(report)


def test_a_catch_up_asks_the_storage_how_far_each_key_got():
    """A writer that stores a batch key by key (DVCLive's files) and is killed part-way holds every step of the
    first keys and none of the others: the catch-up delivers the points each key lacks, not only those past
    the last step any key reached (which lost the other keys' earlier steps)."""
    from tracking_core.delivery.catch_up import CatchUp
    from tracking_core.intake.record import Record

    records = [Record("log", {"a": float(step), "b": float(step)}, step, {}, None, step) for step in range(10)]
    catch_up = CatchUp("writer", [], records, float("inf"), earlier_handed=9)
    missed = list(catch_up.missed(-1, True, lambda: {"a": 9}, str))
    assert [(record.step, record.payload) for record in missed] == [(step, {"b": float(step)}) for step in range(10)]


def test_a_catch_up_left_at_the_end_copies_only_what_no_file_of_the_run_holds(tmp_path):
    """What a backend still lacks of its catch-up when the run ends stays where it is when the run's own
    journal (or its spill) holds it, counted as waiting; records from anywhere else (another run's journal
    being replayed, a take-over's in memory) are handed out for the spill, each once and in order, less
    what the backend's storage was found to hold."""
    from tracking_core.delivery.catch_up import CatchUp, kept_in
    from tracking_core.intake.record import Record

    def journal(path: Path, seqs: range) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        entries = [{"type": "metrics", "step": seq, "values": {"a": 1.0}, "seq": seq} for seq in seqs]
        lines = [json.dumps(entry, separators=(",", ":")) for entry in entries]  # as the journal writes them
        path.write_text("\n".join(lines) + "\n")
        return path

    run_dir = tmp_path / "proj" / "run"
    own = journal(run_dir / "journal.jsonl", range(10))
    other = journal(tmp_path / "other" / "journal.jsonl", range(8, 12))
    in_memory = [Record("log", {"a": 1.0}, seq, {}, None, seq) for seq in (11, 12)]
    catch_up = CatchUp("b", [own, other], in_memory, 13, earlier_handed=-1, kept_by_the_run=kept_in(run_dir, "b"))
    catch_up.stored.add(5)  # the backend's storage held it: never owed again
    kept, elsewhere = catch_up.left(cursor=3)
    assert kept == 5  # 4, 6, 7, 8, 9 wait in the run's journal
    assert [record.seq for record in elsewhere] == [10, 11, 12]
    catch_up.done = True
    assert catch_up.left(cursor=3)[0] == 0 and not list(catch_up.left(cursor=3)[1])
