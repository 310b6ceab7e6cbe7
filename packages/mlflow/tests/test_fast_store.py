"""The local store's fast path writes what MLflow's own ``log_batch`` would have, read back with MLflow's client."""

from __future__ import annotations

import json
import math
import sqlite3
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import tracking_core
from tracking_core.errors import PartialDelivery
from tracking_mlflow import MLflowTracker, fast_store
from tracking_mlflow.fast_store import MetricWriter

INF = float("inf")
NAN = float("nan")

#: (key, value, timestamp ms, step): ties at a step, an older step after a newer one, the same point twice,
#: NaN and infinities, a step logged again later with a smaller value
POINTS = [
    ("loss", 0.5, 1000, 0),
    ("loss", 0.4, 1001, 1),
    ("loss", 0.4, 1001, 1),  # the same point again: stored once
    ("loss", 0.9, 1002, 0),  # an older step logged later: not the latest
    ("loss", 0.3, 1001, 1),  # a tie in step and time: the larger value is the latest
    ("acc", NAN, 1000, 3),
    ("acc", 0.1, 1000, 2),
    ("acc", NAN, 1000, 3),  # NaN twice: one row (MLflow keys it as 0 with is_nan)
    ("up", INF, 1000, 0),
    ("up", -INF, 1000, 1),
    ("up", 1.0, 1005, 1),  # same step, later time: the latest
    ("big", 2.0, 2**62, 2**62),  # 64-bit steps and timestamps
]


def _new_run(tmp_path: Path, name: str) -> tuple[str, str, Path]:
    from mlflow import MlflowClient

    store = tmp_path / f"{name}.db"
    uri = f"sqlite:///{store.as_posix()}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment(name, artifact_location=(tmp_path / name).as_uri())
    return uri, client.create_run(experiment).info.run_id, store


def _stored(uri: str, run_id: str, keys: list[str]) -> tuple[dict, dict]:
    """Every key's history (sorted; NaN as the string 'nan' so that it compares) and the latest metrics."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)

    def comparable(value: float) -> float | str:
        return "nan" if math.isnan(value) else value

    history = {
        key: sorted(
            ((m.step, m.timestamp, comparable(m.value)) for m in client.get_metric_history(run_id, key)), key=repr
        )
        for key in keys
    }
    latest = {key: comparable(value) for key, value in client.get_run(run_id).data.metrics.items()}
    return history, latest


def test_the_same_points_read_back_as_mlflows_own_log_batch_stored_them(tmp_path):
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    keys = sorted({key for key, *_ in POINTS})
    ours_uri, ours_run, ours_store = _new_run(tmp_path, "ours")
    writer = MetricWriter.open(ours_store, ours_run)
    assert writer is not None
    for start in range(0, len(POINTS), 5):  # several transactions: the latest metric across them
        assert writer.write(POINTS[start : start + 5])
    writer.close()
    theirs_uri, theirs_run, _ = _new_run(tmp_path, "theirs")
    client = MlflowClient(tracking_uri=theirs_uri)
    for start in range(0, len(POINTS), 5):
        client.log_batch(theirs_run, metrics=[Metric(*point) for point in POINTS[start : start + 5]])

    ours, theirs = _stored(ours_uri, ours_run, keys), _stored(theirs_uri, theirs_run, keys)
    assert ours == theirs
    history, latest = ours
    assert history["loss"] == [(0, 1000, 0.5), (0, 1002, 0.9), (1, 1001, 0.3), (1, 1001, 0.4)]
    assert latest == {"loss": 0.4, "acc": "nan", "up": 1.0, "big": 2.0}
    assert [value for _, _, value in history["up"]] == [1.7976931348623157e308, -1.7976931348623157e308, 1.0]


def test_a_chunk_is_a_handful_of_statements_whatever_its_keys(tmp_path):
    """sqlite3 lets go of the interpreter lock for every statement and waits for it after: beside a
    training loop that holds it, each statement costs up to a switch interval (5 ms). A chunk of 100
    keys is begin, the run's check, its rows, the latest point of every key, commit."""
    uri, run_id, store = _new_run(tmp_path, "statements")
    writer = MetricWriter.open(store, run_id)
    assert writer is not None
    statements: list[str] = []
    writer._connection.set_trace_callback(statements.append)
    points = [(f"layer{key:02d}", step / (key + 1), 1000 + step, step) for step in range(10) for key in range(100)]
    assert writer.write(points)
    assert len(statements) == 5, [statement[:60] for statement in statements]
    writer._connection.set_trace_callback(None)
    writer.close()
    history, latest = _stored(uri, run_id, [f"layer{key:02d}" for key in range(100)])
    assert all(len(points) == 10 for points in history.values())
    assert latest == {f"layer{key:02d}": 9 / (key + 1) for key in range(100)}


def test_a_run_that_is_not_active_is_left_to_mlflow(tmp_path):
    from mlflow import MlflowClient

    uri, run_id, store = _new_run(tmp_path, "deleted")
    MlflowClient(tracking_uri=uri).delete_run(run_id)
    writer = MetricWriter.open(store, run_id)
    assert writer is not None and writer.write([("loss", 1.0, 1000, 0)]) is False
    with sqlite3.connect(store) as connection:
        assert connection.execute("SELECT COUNT(*) FROM metrics").fetchone() == (0,)


@pytest.mark.parametrize("point", [("a@b", 1.0, 1000, 0), ("x" * 251, 1.0, 1000, 0), ("t", 1.0, -1, 0)])
def test_what_mlflow_refuses_is_left_to_mlflow(tmp_path, point):
    """A name MLflow's check refuses, one beyond its length limit, a negative timestamp: MLflow raises its own error."""
    _, run_id, store = _new_run(tmp_path, "refused")
    writer = MetricWriter.open(store, run_id)
    assert writer is not None and writer.write([("fine", 1.0, 1000, 0), point]) is False
    with sqlite3.connect(store) as connection:
        assert connection.execute("SELECT COUNT(*) FROM metrics").fetchone() == (0,)


def test_a_schema_it_does_not_know_gets_no_writer(tmp_path):
    _, run_id, store = _new_run(tmp_path, "changed")
    with sqlite3.connect(store) as connection:
        connection.execute("ALTER TABLE metrics ADD COLUMN model_id VARCHAR(32)")
    assert MetricWriter.open(store, run_id) is None


def _tracker(tmp_path: Path, **kwargs) -> MLflowTracker:
    tracker = MLflowTracker("fast", logging_dir=tmp_path / "logs", **kwargs)
    tracker.start()
    return tracker


def test_the_embedded_store_takes_points_below_mlflows_orm(tmp_path, monkeypatch, reader_of):
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    tracker = _tracker(tmp_path)
    calls = []
    monkeypatch.setattr(SqlAlchemyStore, "log_batch", lambda *args, **kwargs: calls.append(args))
    entries = [({"loss": 1.0 / (step + 1), "acc": NAN if step == 3 else step / 10}, step, {}) for step in range(50)]
    tracker.log_batch(entries)
    tracker.log_batch([({"loss": 5.0}, 10, {"timestamp": 1.0})])  # an older step, logged later
    assert calls == []  # none went through MLflow's ORM
    monkeypatch.undo()
    tracker.finish()
    reader = reader_of(tracker)
    history = reader.client.get_metric_history(reader.run_id, "loss")
    assert sorted((m.step, m.value) for m in history) == sorted(
        [(step, 1.0 / (step + 1)) for step in range(50)] + [(10, 5.0)]
    )
    assert reader.run.data.metrics["loss"] == 1.0 / 50 and math.isnan(reader.metrics()["acc"][3])
    assert reader.run.info.status == "FINISHED"


def test_points_with_mlflow_3s_options_still_go_through_mlflow(tmp_path, monkeypatch):
    tracker = _tracker(tmp_path)
    calls = []
    client_log_batch = tracker.client.log_batch
    monkeypatch.setattr(tracker.client, "log_batch", lambda *a, **k: calls.append(k) or client_log_batch(*a, **k))
    tracker.log_batch([({"loss": 1.0}, 0, {"synchronous": False})])  # MLflow's async queue
    tracker.flush()
    assert len(calls) == 1
    tracker.finish()


def test_points_the_writer_leaves_to_mlflow_go_in_mlflows_own_chunks(tmp_path, monkeypatch, reader_of):
    tracker = _tracker(tmp_path)
    monkeypatch.setattr(MetricWriter, "write", lambda self, points: False)  # e.g. a step beyond 64 bits
    calls = []
    client_log_batch = tracker.client.log_batch
    monkeypatch.setattr(tracker.client, "log_batch", lambda *a, **k: calls.append(k) or client_log_batch(*a, **k))
    tracker.log_batch([({f"k{index}": float(step) for index in range(10)}, step, {}) for step in range(250)])
    assert [len(call["metrics"]) for call in calls] == [1000, 1000, 500]  # MLflow's per-request limit
    monkeypatch.undo()
    tracker.finish()
    assert reader_of(tracker).metrics()["k9"] == {step: float(step) for step in range(250)}


def test_a_failing_chunk_reports_the_entries_stored_before_it(tmp_path, monkeypatch, reader_of):
    tracker = _tracker(tmp_path)
    monkeypatch.setattr(fast_store, "CHUNK_POINTS", 4)
    writes = []
    write = MetricWriter.write

    def second_fails(self: MetricWriter, points: list) -> bool:
        writes.append(len(points))
        if len(writes) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return write(self, points)

    monkeypatch.setattr(MetricWriter, "write", second_fails)
    entries = [({"a": float(step), "b": float(step)}, step, {}) for step in range(5)]
    with pytest.raises(PartialDelivery) as raised:
        tracker.log_batch(entries)
    assert raised.value.delivered == 2  # the first chunk held steps 0 and 1 whole
    monkeypatch.undo()
    tracker.finish()
    assert reader_of(tracker).metrics() == {"a": {0: 0.0, 1: 1.0}, "b": {0: 0.0, 1: 1.0}}


@pytest.mark.mlflow_server
def test_mlflows_rest_api_serves_what_the_fast_path_stored(tmp_path, mlflow_server):
    """The run writes into the running server's own sqlite store (the session's server, conftest.py), and
    MLflow's REST API then serves those points as it serves what it stored itself."""
    steps = 300
    run = tracking_core.init(
        "served", log_with="mlflow", logging_dir=tmp_path / "logs", on_error="raise",
        init_kwargs={"mlflow": {"tracking_uri": f"sqlite:///{mlflow_server.store.as_posix()}"}},
    )  # fmt: skip
    for step in range(steps):
        run.log({"train/loss": 1.0 / (step + 1), "lr": 1e-3, "bad": NAN if step % 100 == 0 else 1.0}, step=step)
    assert run.finish().ok
    run_id = run.get_tracker("mlflow").active_run_id

    def get(path: str, **query: object) -> dict:
        with urllib.request.urlopen(
            f"{mlflow_server.url}/api/2.0/mlflow/{path}?{urllib.parse.urlencode(query)}", timeout=60
        ) as r:
            return json.loads(r.read())

    history = get("metrics/get-history", run_id=run_id, metric_key="train/loss", max_results=10_000)["metrics"]
    latest = {m["key"]: m for m in get("runs/get", run_id=run_id)["run"]["data"]["metrics"]}
    bad = get("metrics/get-history", run_id=run_id, metric_key="bad", max_results=10_000)["metrics"]
    assert sorted((m["step"], m["value"]) for m in history) == [(step, 1.0 / (step + 1)) for step in range(steps)]
    assert latest["train/loss"]["step"] == steps - 1 and latest["train/loss"]["value"] == 1.0 / steps
    assert latest["lr"]["value"] == 1e-3 and len(bad) == steps
    assert sorted(m["step"] for m in bad if m["value"] == "NaN") == [0, 100, 200]
