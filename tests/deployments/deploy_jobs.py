"""A training job against a team's server, run as its own process while the test injects a fault, and
the table of what each fault cost.

The job makes its run with the ``init(...)`` call of the worked example in docs/distributed.md (the
server's address replaced by the test's) and logs ``STEPS`` steps at a training loop's pace. At step
``FAULT_AT`` it waits until the backend holds every earlier step (so the fault meets a backend that is
delivering, not one still starting) and prints ``fault``: the test injects the fault then. It times every
``log()`` from there on, logs one image at the last step, and prints its finish report as JSON.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracking_core.testing.reliability import last_json_line, waiting_records, waiting_steps

STEPS = 300
FAULT_AT = 100
#: Seconds between two steps: the 300 steps span the outage as a training loop's would.
PACE = 0.02
#: A queue this small fills within an outage of a few seconds, as the default 10,000 fills in a longer
#: one: log()'s wait is then the one a long outage costs (bounded by SPILL_OVER_SECONDS), not zero.
QUEUE_SIZE = 100
#: The job is killed (and the test fails) past this many seconds.
JOB_DEADLINE = 300
#: Seconds a job may take to exit after printing its report; past them it is killed, and said to hang.
EXIT_GRACE = 15

JOB = r"""
import json, os, sys, time
import numpy as np
import tracking_core
call, backend, steps, fault_at, pace, queue_size, finish_timeout = sys.argv[1:8]
steps, fault_at, pace = int(steps), int(fault_at), float(pace)
# the worked example's call, with the queue size the test gives
call = call.rstrip()[:-1].rstrip().rstrip(",") + f", queue_size={int(queue_size)})"
run = eval(call, {"tracking_core": tracking_core})
print("started", flush=True)
waits = []
for step in range(steps):
    if step == fault_at:
        assert run.flush(timeout=300), "the backend did not take the first steps"
        print("fault", flush=True)
    began = time.perf_counter()
    run.log({"train/loss": 1.0 / (step + 1), "lr": 1e-3}, step=step)
    if step >= fault_at:
        waits.append(time.perf_counter() - began)
    time.sleep(pace)
# an image at the last step: MLflow sends it through the server to --artifacts-destination
run.log_images({"samples": np.zeros((8, 8, 3), dtype=np.uint8)}, step=steps - 1)
print("logged", flush=True)
tracker = run.get_tracker(backend)
began = time.monotonic()
report = run.finish(timeout=float(finish_timeout))
finish_seconds = time.monotonic() - began
result = report.backends[backend]
waits.sort()
print(json.dumps({
    "ok": report.ok, "state": result.state, "delivered": result.delivered, "spilled": result.spilled,
    "recovered": result.recovered, "errors": result.errors, "notes": list(result.notes),
    "report": str(report), "run_dir": os.path.abspath(run.run_dir),
    "run_id": getattr(tracker, "active_run_id", None) or getattr(tracker, "run_hash", None),
    "p99_wait": waits[int(0.99 * (len(waits) - 1))], "max_wait": waits[-1], "finish_seconds": finish_seconds,
}))
"""

OUTCOMES: list[dict[str, Any]] = []


def run_job(
    init_call: str, backend: str, cwd: Path, fault: Callable[[], None], finish_timeout: float = 120
) -> dict[str, Any]:
    """Run the job to its end, calling ``fault`` in a thread when the job reaches ``FAULT_AT``: the job's
    JSON line, with ``outage_seconds``, how long ``fault`` took (the server, or its database, down), and
    ``hung_at_exit`` when the process was still running ``EXIT_GRACE`` seconds after its report (it is
    killed then, as a scheduler would end it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "__AIM"))}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    args = [init_call, backend, STEPS, FAULT_AT, PACE, QUEUE_SIZE, finish_timeout]
    process = subprocess.Popen(
        [sys.executable, "-c", JOB, *map(str, args)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    errors: list[BaseException] = []

    outage: list[float] = []

    def inject() -> None:
        began = time.monotonic()
        try:
            fault()
        except BaseException as error:  # reported with the job's result
            errors.append(error)
        outage.append(time.monotonic() - began)

    injector = threading.Thread(target=inject, daemon=True)
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.append(process.stderr.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    watchdog = threading.Timer(JOB_DEADLINE, process.kill)  # a job that hangs fails the test, not the session
    watchdog.start()
    lines = []
    assert process.stdout is not None
    hung_at_exit = False
    try:
        for line in process.stdout:
            lines.append(line)
            if line.strip() == "fault":
                injector.start()
            if line.startswith("{"):  # the report: the job's end, unless the SDK keeps the process from exiting
                break
        try:
            process.wait(timeout=EXIT_GRACE)
        except subprocess.TimeoutExpired:
            hung_at_exit = True
            process.kill()
            process.wait(30)
        lines.extend(process.stdout)
    finally:
        watchdog.cancel()
    reader.join(10)
    if injector.is_alive() or injector.ident is not None:
        injector.join(300)
    if errors:
        raise AssertionError(f"the fault could not be injected: {errors[0]!r}") from errors[0]
    assert hung_at_exit or process.returncode == 0, "".join(lines)[-2000:] + "".join(stderr)[-4000:]
    assert outage, "the job never reached the step of the fault"
    return {**last_json_line("".join(lines)), "outage_seconds": outage[0], "hung_at_exit": hung_at_exit}


def spilled_steps(run_dir: str | Path, backend: str) -> list[int]:
    """The steps of the metric records the backend still owes (in the run's journal or its spill, past its cursor)."""
    return waiting_steps(run_dir, backend)


def spilled_records(run_dir: str | Path, backend: str) -> int:
    """How many records of any kind (metrics, the image) the backend still owes."""
    return len(waiting_records(run_dir, backend))


def replay(run_dir: str | Path, backend: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``tracking replay <run> --to <backend>``, the command a user runs, from this environment."""
    tracking = Path(sys.executable).parent / "tracking"
    return subprocess.run(
        [str(tracking), "replay", str(run_dir), "--to", backend],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "__AIM"))},
    )


def record(scenario: str, backend: str, job: dict[str, Any], figures: dict[str, Any], replayed: bool) -> None:
    OUTCOMES.append(
        {
            "scenario": scenario,
            "backend": backend,
            "down": job.get("down") or f"{job['outage_seconds']:.1f} s",
            "ok": job["ok"],
            "sent": figures["sent"],
            "stored": figures["delivered"],
            "duplicated": figures["duplicated"],
            "lost": figures["lost"],
            "spilled at finish": job["spilled"],
            "replayed": "yes" if replayed else "no",
            "log() p99": f"{job['p99_wait'] * 1000:.2f} ms",
            "log() max": f"{job['max_wait']:.2f} s",
            "finish()": f"{job['finish_seconds']:.1f} s",
            "exit": f"hung, killed after {EXIT_GRACE} s" if job["hung_at_exit"] else "ok",
        }
    )


def outcome_table(rows: list[dict[str, Any]]) -> str:
    columns = list(rows[0])
    cells = [columns] + [[str(row[column]) for column in columns] for row in rows]
    widths = [max(len(line[index]) for line in cells) for index in range(len(columns))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
