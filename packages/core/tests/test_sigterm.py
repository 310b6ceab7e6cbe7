"""SIGTERM, as launchers send it: torchrun to the surviving ranks when one fails, SLURM at the time limit or
``scancel``, Kubernetes before a pod goes. What was logged before the signal must reach the backends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

# A backend that is slow to start (as MLflow's sqlite store or Aim's repo are) and stores each point
# as a line of a file, durable on return.
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    import tracking_core

    class SlowFile(tracking_core.GeneralTracker):
        name = "slowfile"
        requires_logging_directory = False
        durable_on_return = True

        def __init__(self, *args, **kwargs):
            super().__init__()

        @property
        def tracker(self):
            return None

        def start(self):
            time.sleep(float(os.environ["START_SECONDS"]))

        def log(self, values, step=None, **kwargs):
            with open(os.environ["POINTS"], "a") as points:
                points.write(f"{step}\\n")

    tracking_core.register_tracker_class(SlowFile)
    if sys.argv[1] == "own-handler":
        signal.signal(signal.SIGTERM, lambda number, frame: (print("own handler", flush=True), os._exit(7)))
    run = tracking_core.init("sigterm", log_with="slowfile", logging_dir="runs")
    for step in range(5):
        run.log({"loss": float(step)}, step=step)
    print("logged", flush=True)
    if sys.argv[1] == "crash":
        raise RuntimeError("peer went away")  # the exit hook now waits for the slow start, then delivers
    time.sleep(120)  # blocked in training when the signal comes
    """
)


def _start(tmp_path, mode: str, start_seconds: float) -> subprocess.Popen:
    env = {**os.environ, "POINTS": str(tmp_path / "points.txt"), "START_SECONDS": str(start_seconds)}
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, mode],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _terminate_after_logging(process: subprocess.Popen, delay: float) -> tuple[int, str, str]:
    assert process.stdout.readline().strip() == "logged"
    time.sleep(delay)
    process.send_signal(signal.SIGTERM)
    try:
        stdout, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("the process did not exit within 60 s of SIGTERM") from None
    return process.returncode, stdout, stderr


def _stored(tmp_path) -> list[int]:
    path = tmp_path / "points.txt"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def test_sigterm_during_training_delivers_what_was_logged_then_exits(tmp_path):
    returncode, _out, stderr = _terminate_after_logging(_start(tmp_path, "train", 1.0), delay=0.2)
    assert _stored(tmp_path) == [0, 1, 2, 3, 4], stderr
    assert returncode == 128 + signal.SIGTERM, stderr  # still reads as "ended by SIGTERM" to the launcher


def test_sigterm_while_the_exit_hook_delivers_does_not_cut_it_short(tmp_path):
    """torchrun's case: rank 0 dies of the peer's crash, and SIGTERM comes while its exit hook delivers."""
    returncode, _out, stderr = _terminate_after_logging(_start(tmp_path, "crash", 3.0), delay=1.0)
    assert _stored(tmp_path) == [0, 1, 2, 3, 4], stderr
    assert returncode != 0 and "peer went away" in stderr


def test_a_sigterm_handler_of_the_application_is_left_alone(tmp_path):
    returncode, stdout, _err = _terminate_after_logging(_start(tmp_path, "own-handler", 0.1), delay=0.5)
    assert "own handler" in stdout and returncode == 7
