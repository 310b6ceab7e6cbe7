"""MLflow's sqlite store: points/s written four ways, each into a fresh store made by MLflow.

* ``sqlite3, one transaction``: the same rows inserted with ``sqlite3`` into ``metrics`` in a single
  transaction (1,000 rows per statement), and the latest point per key into ``latest_metrics``: the
  storage's physical limit;
* ``tracking_mlflow (fast store)``: ``tracking_mlflow.fast_store.MetricWriter``, in chunks of
  ``--chunk`` points (default: a dispatcher batch of 1,000 records of ``--keys`` metrics), one
  transaction each, as the MLflow backend writes to a local store;
* ``MlflowClient.log_batch``: MLflow's own batch call, 1,000 metrics per call (its limit);
* ``MlflowClient.log_batch`` is slow enough that it runs on ``--client-points`` points only.

``--beside-a-loop`` adds what threads delivery meets: the fast store writing from a thread while this
process's main thread runs a pure-Python loop (the GIL almost always taken), once with its INSERT of
many rows per statement and once with one row per statement. Printed: the points the writer stored
while the loop ran, and the loop's time against the same loop alone.

Then the store is read back with ``MlflowClient``: every key's ``get_metric_history`` and the run's
latest metrics are compared with what was written.

    python tools/bench_mlflow_store.py                          # 1,000,000 points: 100 keys x 10,000 steps
    python tools/bench_mlflow_store.py --keys 8 --steps 125000  # the loop benchmark's 8 scalars
    python tools/bench_mlflow_store.py --keys 8 --steps 12500 --beside-a-loop
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


class Clock:
    """Wall and CPU seconds of a block (on a shared machine the CPU time is the steadier figure)."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def points(keys: int, steps: int, start_ms: int) -> list[tuple[str, float, int, int]]:
    names = [f"train/metric_{index:03d}" for index in range(keys)]
    return [
        (name, 1.0 / (step + index + 1), start_ms + step, step)
        for step in range(steps)
        for index, name in enumerate(names)
    ]


def new_run(folder: Path) -> tuple[str, str, Path]:
    from mlflow import MlflowClient

    store = folder / "mlflow.db"
    uri = f"sqlite:///{store.as_posix()}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("bench", artifact_location=(folder / "artifacts").as_uri())
    return uri, client.create_run(experiment).info.run_id, store


def by_sqlite(folder: Path, data: list) -> float:
    from tracking_mlflow.fast_store import stored_value

    _, run_id, store = new_run(folder)
    connection = sqlite3.connect(store, isolation_level=None)
    clock = Clock().__enter__()
    rows = [(key, *stored_value(value)[:1], timestamp, run_id, step, False) for key, value, timestamp, step in data]
    latest = {key: (key, value, timestamp, run_id, step, False) for key, value, timestamp, step in data}
    connection.execute("BEGIN IMMEDIATE")
    per = 1000  # rows per statement: fewer statement steps than one row each (see fast_store.ROWS_PER_STATEMENT)
    insert = "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES "
    whole = len(rows) - len(rows) % per
    connection.executemany(
        insert + ",".join(["(?,?,?,?,?,?)"] * per),
        ([field for row in rows[index : index + per] for field in row] for index in range(0, whole, per)),
    )
    if whole < len(rows):
        connection.execute(
            insert + ",".join(["(?,?,?,?,?,?)"] * (len(rows) - whole)), [field for row in rows[whole:] for field in row]
        )
    connection.executemany(
        "INSERT INTO latest_metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?,?,?,?,?,?)",
        list(latest.values()),
    )
    connection.execute("COMMIT")
    clock.__exit__()
    connection.close()
    return clock


def by_fast_store(folder: Path, data: list, chunk: int) -> tuple[Clock, str, str]:
    from tracking_mlflow.fast_store import MetricWriter

    uri, run_id, store = new_run(folder)
    writer = MetricWriter.open(store, run_id)
    assert writer is not None, "the store's schema is not the one the fast store knows"
    with Clock() as clock:
        for index in range(0, len(data), chunk):
            assert writer.write(data[index : index + chunk])
    writer.close()
    return clock, uri, run_id


def by_client(folder: Path, data: list) -> Clock:
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    uri, run_id, _ = new_run(folder)
    client = MlflowClient(tracking_uri=uri)
    with Clock() as clock:
        for index in range(0, len(data), 1000):
            client.log_batch(run_id, metrics=[Metric(*point) for point in data[index : index + 1000]], synchronous=True)
    return clock


def busy(units: int) -> int:
    total = 0
    for index in range(units):
        total += index * index % 7
    return total


def beside_a_loop(folder: Path, data: list, chunk: int, rows_per_statement: int, loop_units: int) -> tuple[int, float]:
    """Points the fast store wrote from a thread while the main thread ran ``busy(loop_units)``, and the
    loop's seconds."""
    import threading

    from tracking_mlflow import fast_store

    _, run_id, store = new_run(folder)
    writer = fast_store.MetricWriter.open(store, run_id)
    assert writer is not None
    writer._rows_per_statement = rows_per_statement
    stop, written = threading.Event(), [0]

    def write() -> None:
        for index in range(0, len(data), chunk):
            if stop.is_set():
                return
            assert writer.write(data[index : index + chunk])
            written[0] += len(data[index : index + chunk])

    thread = threading.Thread(target=write)
    started = time.perf_counter()
    thread.start()
    busy(loop_units)
    took = time.perf_counter() - started
    count = written[0]
    stop.set()
    thread.join()
    writer.close()
    return count, took


def loop_report(tmp: str, data: list, chunk: int) -> None:
    started = time.perf_counter()
    busy(2_000_000)
    units = int(2_000_000 * 5.0 / (time.perf_counter() - started))  # a ~5 s loop
    alone = []
    for _ in range(2):
        started = time.perf_counter()
        busy(units)
        alone.append(time.perf_counter() - started)
    print(
        f"beside a pure-Python loop of {min(alone):.2f} s alone ({len(data):,} points offered, {chunk:,} a transaction):"
    )
    from tracking_mlflow.fast_store import ROWS_PER_STATEMENT

    for label, per in ((f"{ROWS_PER_STATEMENT:,} rows per INSERT", ROWS_PER_STATEMENT), ("1 row per INSERT", 1)):
        folder = Path(tmp, f"loop-{per}")
        folder.mkdir()
        count, took = beside_a_loop(folder, data, chunk, per, units)
        print(
            f"  {label:>22}: {count:>9,} points stored while the loop ran; loop {took:.2f} s ({took / min(alone):.2f}x alone)"
        )


def read_back(uri: str, run_id: str, data: list) -> str:
    """Every point once in ``get_metric_history``, and the latest metrics right: 'ok', or what differs."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    expected: dict[str, list[tuple[int, int, float]]] = {}
    for key, value, timestamp, step in data:
        expected.setdefault(key, []).append((step, timestamp, value))
    started = time.perf_counter()
    for key, want in expected.items():
        got = sorted((m.step, m.timestamp, m.value) for m in client.get_metric_history(run_id, key))
        if got != sorted(want):
            return f"history of {key}: {len(got)} points read, {len(want)} written"
    latest = client.get_run(run_id).data.metrics
    for key, want in expected.items():
        if latest.get(key) != max(want)[2]:
            return f"latest {key}: {latest.get(key)} != {max(want)[2]}"
    return f"ok ({len(data):,} points in {len(expected)} histories read back in {time.perf_counter() - started:.1f} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument(
        "--chunk", type=int, default=None, help="points per fast-store transaction (default 1,000 x keys)"
    )
    parser.add_argument("--client-points", type=int, default=50_000)
    parser.add_argument("--beside-a-loop", action="store_true", help="also the fast store beside a busy loop")
    args = parser.parse_args(argv)
    data = points(args.keys, args.steps, int(time.time() * 1000))
    chunk = args.chunk or 1000 * args.keys
    rows = []
    with tempfile.TemporaryDirectory(prefix="tracking-bench-mlflow-") as tmp:
        for name in ("sqlite", "fast", "client"):
            (Path(tmp) / name).mkdir()
        rows.append(("sqlite3, one transaction", len(data), by_sqlite(Path(tmp, "sqlite"), data)))
        fast, uri, run_id = by_fast_store(Path(tmp, "fast"), data, chunk)
        rows.append((f"tracking_mlflow (fast store), {chunk:,} points a transaction", len(data), fast))
        few = data[: args.client_points]
        rows.append(("MlflowClient.log_batch, 1,000 a call", len(few), by_client(Path(tmp, "client"), few)))
        checked = read_back(uri, run_id, data)
        if args.beside_a_loop:
            loop_report(tmp, data, chunk)
    import mlflow

    print(f"MLflow {mlflow.__version__}, sqlite {sqlite3.sqlite_version}, {args.keys} keys x {args.steps:,} steps")
    width = max(len(row[0]) for row in rows)
    limit = rows[0][2]
    print(
        f"{'how'.ljust(width)}  {'points':>10}  {'points/s':>10}  {'per CPU s':>10}  time per point vs the limit (CPU)"
    )
    for name, count, clock in rows:
        per_point = clock.cpu / count / (limit.cpu / rows[0][1])
        print(
            f"{name.ljust(width)}  {count:>10,}  {count / clock.wall:>10,.0f}  {count / clock.cpu:>10,.0f}  {per_point:.1f}x"
        )
    print(f"fast store read back with MlflowClient: {checked}")
    return 0 if checked.startswith("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
