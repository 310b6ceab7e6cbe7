"""MLflow behind a real `mlflow server` that dies mid-run and comes back: nothing lost, nothing twice."""

from __future__ import annotations

import threading
import time

import pytest
import tracking_core
from tracking_core.testing.reliability import tally

pytestmark = [pytest.mark.reliability, pytest.mark.mlflow_server]

STEPS = 2000


def test_a_server_killed_and_restarted_gets_every_point_in_the_original_run(
    tmp_path, monkeypatch, reader_of, mlflow_server
):
    """The session's server (conftest.py), SIGKILLed mid-run and started again on its store: the next test
    that uses it finds it answering."""
    server = mlflow_server
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
    # Fail fast while the server is down; the dispatcher's own retries (1 s, 2 s, 4 s...) bring it back.
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")
    outage: dict[str, float] = {}

    def kill_and_restart() -> None:
        server.kill()
        outage["killed"] = time.monotonic()
        time.sleep(6)
        server.start(timeout=180)  # a loaded machine
        outage["back"] = time.monotonic()

    run = tracking_core.init(
        "outage", log_with=["mlflow", "jsonl"], logging_dir=tmp_path / "logs", retry_backoff=(1.0, 8.0)
    )
    restarter = threading.Thread(target=kill_and_restart)
    try:
        for step in range(STEPS):
            if step == 600:
                restarter.start()
            run.log({"train/loss": 1.0 / (step + 1), "lr": 1e-3}, step=step)
            time.sleep(0.006)
        restarter.join()
        report = run.finish(timeout=180)
        # read back through the restarted server, from the store the run wrote to
        monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "60")  # reading 3000 points back on a loaded machine
        reader = reader_of(run.get_tracker("mlflow"))
        history = reader.client.get_metric_history(reader.run_id, "train/loss")
    finally:
        if restarter.is_alive():
            restarter.join()
    backend = report.backends["mlflow"]
    figures = tally("mlflow server killed 6 s", "mlflow", range(STEPS), [point.step for point in history])
    assert figures["lost"] == 0 and figures["duplicated"] == 0, (figures, str(report))
    assert backend.state == "finished" and backend.spilled == 0 and backend.recovered > 0, str(report)
    assert backend.errors >= 1 and any("recovered" in note for note in backend.notes), str(report)
    assert report.ok, str(report)
    print(f"outage {outage['back'] - outage['killed']:.1f} s; {backend.recovered} records recovered from the spill")


def test_a_server_that_hangs_does_not_hold_up_the_loop(tmp_path, monkeypatch, reader_of, mlflow_server):
    """The server stops answering (SIGSTOP) while the loop logs 30x the queue: MLflow's request hangs, the
    queue goes to the spill instead of log() waiting, and once the server answers again (SIGCONT) the
    original run gets every point once. The server is the session's (conftest.py): frozen, never killed."""
    from tracking_core.delivery import worker

    monkeypatch.setattr(worker, "SPILL_OVER_SECONDS", 1.0)
    server = mlflow_server
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "120")  # a hung request waits, it does not fail
    run = tracking_core.init("hung", log_with=["mlflow", "jsonl"], logging_dir=tmp_path / "logs", queue_size=100)
    first, steps = 100, 3000
    try:
        for step in range(first):
            run.log({"train/loss": 1.0 / (step + 1)}, step=step)
        assert run.flush(timeout=60)
        server.freeze()
        looping = threading.Thread(
            target=lambda: [run.log({"train/loss": 1.0 / (step + 1)}, step=step) for step in range(first, steps)],
            daemon=True,
        )
        looping.start()
        looping.join(30)
        loop_done = not looping.is_alive()
        server.thaw()
        assert loop_done, "log() waited for the hung server"
        report = run.finish(timeout=120)
        reader = reader_of(run.get_tracker("mlflow"))
        history = reader.client.get_metric_history(reader.run_id, "train/loss")
    finally:
        server.thaw()
    backend = report.backends["mlflow"]
    figures = tally("mlflow server hangs (SIGSTOP)", "mlflow", range(steps), [point.step for point in history])
    assert figures["lost"] == 0 and figures["duplicated"] == 0, (figures, str(report))
    assert backend.ok and backend.recovered > 0, str(report)
    assert any("did not return" in note for note in backend.notes), str(report)
