"""Delivery guarantees with the real backend of this cell: a script that never calls ``finish()``, and a
job killed with SIGKILL and resumed. What the backend holds is read back with its own reader and
counted (sent / delivered / spilled / lost / duplicated; the table prints at the end of the session).
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
import tracking_core
from tracking_core.testing.reliability import last_json_line, run_script, start_in_own_session, tally

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"
pytestmark = pytest.mark.reliability

# Registered before tracking_core is imported, so it runs after every other exit hook: the run
# was finished by the library's own hook (or not at all) by then.
FORGETFUL = """
import atexit, json, sys

def read_back():
    run = globals().get("run")
    report = run.state.report if run is not None else None
    out = {"finished": report is not None}
    if report is not None:
        out["delivered"] = {name: b.delivered for name, b in report.backends.items()}
        out["states"] = {name: b.state for name, b in report.backends.items()}
        for name in report.backends:
            try:
                history = run.get_tracker(name).read_back_history().get("train/loss", [])
                out[name] = [step for step, _ in history]
            except NotImplementedError:
                out[name] = None
    sys.stdout.write(json.dumps(out) + "\\n")
    sys.stdout.flush()

atexit.register(read_back)
import tracking_core
run = tracking_core.init("forgot", log_with=[sys.argv[1], "jsonl"], logging_dir="runs", config={"lr": 0.1})
for step in range(200):
    run.log({"train/loss": 1.0 / (step + 1)}, step=step)
if sys.argv[2] == "raise":
    raise RuntimeError("the training loop crashed")
"""


@pytest.mark.parametrize("ending", ["normal", "raise"])
def test_a_run_never_finished_reaches_the_backend(tmp_path, ending):
    """The script ends right after its loop, while the backend may still be starting."""
    result = run_script(FORGETFUL, CELL, ending, cwd=tmp_path)
    assert result.returncode == (0 if ending == "normal" else 1), result.stdout + result.stderr
    assert "can't register atexit" not in result.stderr, result.stderr
    out = last_json_line(result.stdout)
    assert out["finished"], result.stderr
    for name in {CELL, "jsonl"}:
        assert out["states"][name] == "finished", (out, result.stderr)
        assert out["delivered"][name] == 201, out  # config + 200 points
        if out[name] is not None:
            figures = tally(f"no finish(), {ending} exit", name, range(200), out[name])
            assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


KILLED = """
import json, sys, time, tracking_core
resume = sys.argv[2] == "resume"
run = tracking_core.init("killed", log_with=[sys.argv[1], "jsonl"], logging_dir="runs", resume=resume)
first, last = run.state.step + 1, int(sys.argv[3])
for step in range(first, last):
    run.log({"train/loss": 1.0 / (step + 1)})
    if step == first + 100 and not resume:
        run.get_tracker(sys.argv[1], unwrap=True)  # the backend is up: the kill lands mid-delivery
        print("ready", flush=True)
    time.sleep(0.003)
report = run.finish()
tracker = run.get_tracker(sys.argv[1])
try:
    points = [step for step, _ in tracker.read_back_history().get("train/loss", [])]
except NotImplementedError:
    points = None
print(json.dumps({"first": first, "points": points, "resumed": run.resumed, "ok": report.ok,
                  "notes": report.backends[sys.argv[1]].notes}), flush=True)
"""


def test_a_job_killed_with_sigkill_resumes_without_losing_or_repeating_points(tmp_path):
    process = start_in_own_session(KILLED, CELL, "new", "1000000", cwd=tmp_path)
    assert process.stdout is not None
    deadline = time.monotonic() + 240
    while process.stdout.readline().strip() != "ready":
        assert time.monotonic() < deadline and process.poll() is None, "the first process never got going"
    time.sleep(1.5)  # past at least one background flush
    os.killpg(process.pid, signal.SIGKILL)  # the job and every process it started (an SDK's service too)
    process.wait(60)
    (run_dir,) = (tmp_path / "runs" / "killed").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    written = sum(1 for line in (run_dir / "journal.jsonl").read_text().splitlines() if '"metrics"' in line)
    target = written + 100
    result = run_script(KILLED, CELL, "resume", str(target), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = last_json_line(result.stdout)
    # it carries on after the furthest record any backend or the journal holds: no step is logged twice
    assert out["resumed"] and out["first"] >= written, (out, manifest)
    if out["points"] is None:
        return
    if manifest["backends"].get(CELL) is None:  # the backend cannot reopen its run: a new one, from the resume on
        assert any("not resumed" in note for note in out["notes"]), out["notes"]
        figures = tally("SIGKILL, resume (new backend run)", CELL, range(written, target), out["points"])
    else:
        # steps in [written, first) reached some backend but not the journal: the kill caught them in a queue
        sent = [*range(written), *range(out["first"], target)]
        figures = tally("SIGKILL, then resume=True", CELL, sent, out["points"])
    assert figures["duplicated"] == 0, figures
    assert figures["lost"] == 0, figures


ALONE = """
import json, sys, time, tracking_core
cell, mode = sys.argv[1], sys.argv[2]
run = tracking_core.init("alone", log_with=[cell], logging_dir="runs", resume=mode == "resume")
if mode == "new":
    run.get_tracker(cell, unwrap=True)  # the backend is up
    for step in range(1_000_000):
        run.log({"train/loss": 1.0 / (step + 1)}, step=step)
        print(step, flush=True)
        time.sleep(0.003)
first = run.state.step + 1
for step in range(first, first + 20):
    run.log({"after/loss": 1.0}, step=step)
report = run.finish()
history = run.get_tracker(cell).read_back_history()
print(json.dumps({"first": first, "before": [s for s, _ in history.get("train/loss", [])],
                  "after": [s for s, _ in history.get("after/loss", [])], "notes": report.backends[cell].notes}))
"""


def test_what_a_sigkill_costs_a_backend_on_its_own(tmp_path):
    """No journal to catch up from: what the backend loses is what it had not made durable (measured,
    printed); a resumed run never logs a step the backend already holds."""
    process = start_in_own_session(ALONE, CELL, "new", cwd=tmp_path)
    assert process.stdout is not None
    last = -1
    while last < 300:
        line = process.stdout.readline()
        assert line, "the first process died"
        last = int(line) if line.strip().isdigit() else last  # SDKs print their own lines too
    time.sleep(0.7)  # the kill lands at a random point of the 1 s flush cycle
    os.killpg(process.pid, signal.SIGKILL)  # the job and every process it started (an SDK's service too)
    last = max([last, *(int(word) for word in process.stdout.read().split() if word.isdigit())])
    process.wait(60)
    result = run_script(ALONE, CELL, "resume", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = last_json_line(result.stdout)
    kept = out["before"] if not any("not resumed" in note for note in out["notes"]) else []
    figures = tally("SIGKILL, no journal (measured)", CELL, range(last + 1), kept)
    figures["duplicated"] += sum(step >= out["first"] for step in kept)  # steps the resumed run logs again
    assert figures["duplicated"] == 0, (figures, out["first"])
    assert out["after"] == list(range(out["first"], out["first"] + 20))


def test_a_run_that_stored_nothing_yet_reads_back_empty(tmp_path):
    """A reopened run's catch-up asks the backend's storage how far it got. A run whose SDK has written
    nothing yet holds nothing: its reader says so (an empty history) rather than failing, which would
    read as "cannot say" and skip the records the earlier process had handed over (lost)."""
    run = tracking_core.init("empty", log_with=[CELL], logging_dir=tmp_path / "runs")
    run.get_tracker(CELL, unwrap=True)  # started
    try:
        history = run.get_tracker(CELL).read_back_history()
    except NotImplementedError:
        pytest.skip(f"{CELL} has no reader")
    finally:
        run.finish()
    assert {key: points for key, points in history.items() if points} == {}


BEHIND = """
import json, sys, tracking_core
cell, mode, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
timeout = 0.01 if mode == "new" else 120.0
run = tracking_core.init("behind", log_with=[cell], logging_dir="runs", resume=mode != "new", finish_timeout=timeout)
if mode == "new":
    run.get_tracker(cell, unwrap=True)  # the backend is up: the timeout falls in the middle of delivery
    # a backend that kept up with the loop would finish in time on a quiet machine: each batch now costs
    # 0.5 ms a record more, so about 1.5 s of delivery is left when finish() gives up
    import time
    backend = type(run.get_tracker(cell))
    stored_as_before = backend.log_batch
    def slower(self, entries):
        time.sleep(0.0005 * len(entries))
        return stored_as_before(self, entries)
    backend.log_batch = slower
    for step in range(steps):
        run.log({**{f"layer{i:02d}/norm": i + step / steps for i in range(20)}, "train/loss": 1.0 / (step + 1)},
                step=step)
report = run.finish()
entry = report.backends[cell]
out = {"state": entry.state, "delivered": entry.delivered, "spilled": entry.spilled, "run_dir": str(run.run_dir)}
if mode == "read":
    out["points"] = [s for s, _ in run.get_tracker(cell).read_back_history().get("train/loss", [])]
print(json.dumps(out), flush=True)
"""


def test_a_backend_behind_at_the_finish_timeout_spills_the_rest_exactly_once(tmp_path):
    """``finish()`` gives up on a backend still delivering: what it did not store waits (in the run's journal),
    and ``tracking replay`` completes the original run with every point once."""
    steps = 3000
    result = run_script(BEHIND, CELL, "new", str(steps), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    first = last_json_line(result.stdout)
    assert first["state"] == "timed_out", first
    assert first["spilled"] > 0 and first["delivered"] + first["spilled"] >= steps, first
    run_dir = tmp_path / first["run_dir"]
    replayed = run_script(
        "import sys, tracking_core.cli; sys.exit(tracking_core.cli.main(['replay', sys.argv[1], '--to', sys.argv[2]]))",
        str(run_dir),
        CELL,
        cwd=tmp_path,
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    read = last_json_line(run_script(BEHIND, CELL, "read", "0", cwd=tmp_path).stdout)
    manifest = json.loads((run_dir / "run.json").read_text())
    if manifest["backends"].get(CELL) is None:  # the backend cannot reopen its run: nothing to read back there
        pytest.skip(f"{CELL} does not reopen a run, so a spill cannot complete the original one")
    figures = tally("finish timed out mid-delivery, spill replayed", CELL, range(steps), read["points"])
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
