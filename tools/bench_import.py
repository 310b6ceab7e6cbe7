"""Import benchmark: ``tracking import`` against the SDK's own reader reading the same data.

    python tools/bench.py --import                        # both sources (needs tensorboard and mlflow)
    python tools/bench.py --import --only tensorboard --points 1000000
    python tools/bench.py --import --only mlflow --runs 100

* **TensorBoard**: one folder of ``--points`` scalars (10 tags, one event per point, as
  ``torch.utils.tensorboard`` writes them). The SDK row loads it with TensorBoard's
  ``EventAccumulator`` (every scalar kept) and reads every tag's scalars; the import row is
  ``import_runs("tensorboard", ...)``, which reads the same events and writes the journal.
* **MLflow**: one experiment of ``--runs`` runs in a SQLite store (5 metrics x 200 steps and 10 params
  per run). The SDK row is what any reader of that experiment does with ``MlflowClient``:
  ``search_runs``, then each metric's history; the import row is ``import_runs("mlflow", ...)``.

Each row is the best of ``--repeat`` runs (the data generated once, before any clock starts), in one
process with the SDK already imported. The target: importing within 2x of the SDK's read.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

TAGS = 10


def _best(work: Callable[[], object], repeat: int, reset: Callable[[], None] | None = None) -> float:
    times = []
    for _ in range(repeat):
        if reset is not None:
            reset()
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return min(times)


def _tensorboard_folder(folder: Path, points: int) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tracking_tensorboard.tfrecord import framed

    folder.mkdir(parents=True)
    steps = points // TAGS
    began = 1_764_500_000.0
    with open(folder / "events.out.tfevents.1764500000.bench.1.0", "wb") as handle:
        handle.write(framed(event_pb2.Event(wall_time=began, file_version="brain.Event:2").SerializeToString()))
        for step in range(steps):
            for tag in range(TAGS):
                event = event_pb2.Event(wall_time=began + step * 0.01, step=step)
                event.summary.value.append(
                    summary_pb2.Summary.Value(tag=f"metric/{tag}", simple_value=1.0 / (step + 1))
                )
                handle.write(framed(event.SerializeToString()))


def bench_tensorboard(points: int, repeat: int, scratch: Path) -> list[tuple[str, str, float, str]]:
    from tensorboard.backend.event_processing import event_accumulator
    from tracking_core.transfer.importing import import_runs

    source = scratch / "tb" / "run"
    began = time.perf_counter()
    _tensorboard_folder(source, points)
    print(f"  generated {points:,} TensorBoard points in {time.perf_counter() - began:.1f} s")

    def sdk() -> int:
        accumulator = event_accumulator.EventAccumulator(str(source), size_guidance={event_accumulator.SCALARS: 0})
        accumulator.Reload()
        return sum(len(accumulator.Scalars(tag)) for tag in accumulator.Tags()["scalars"])

    assert sdk() == points
    out = scratch / "tb-import"
    sdk_seconds = _best(sdk, repeat)
    ours = _best(
        lambda: import_runs("tensorboard", str(source.parent), logging_dir=out, progress=False),
        repeat,
        reset=lambda: shutil.rmtree(out, ignore_errors=True),
    )
    label = f"{points:,} points, 1 run"
    return [("tensorboard", label, sdk_seconds, "EventAccumulator.Reload + Scalars"), ("", "", ours, "tracking import")]


def _mlflow_store(database: Path, runs: int) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=f"sqlite:///{database}")
    experiment = client.create_experiment("bench")
    for index in range(runs):
        run = client.create_run(experiment, run_name=f"run-{index}")
        metrics = [
            Metric(f"m{key}", 1.0 / (step + 1), 1_764_500_000_000 + step, step)
            for key in range(5)
            for step in range(200)
        ]
        client.log_batch(run.info.run_id, metrics=metrics, params=[Param(f"p{k}", str(k)) for k in range(10)])
        client.set_terminated(run.info.run_id)


def bench_mlflow(runs: int, repeat: int, scratch: Path) -> list[tuple[str, str, float, str]]:
    from mlflow import MlflowClient
    from tracking_core.transfer.importing import import_runs

    database = scratch / "mlflow.db"
    began = time.perf_counter()
    _mlflow_store(database, runs)
    print(f"  generated {runs} MLflow runs in {time.perf_counter() - began:.1f} s")

    def sdk() -> int:
        client = MlflowClient(tracking_uri=f"sqlite:///{database}")
        experiment = client.get_experiment_by_name("bench")
        count = 0
        for run in client.search_runs([experiment.experiment_id], max_results=1000):
            for key in run.data.metrics:
                count += len(client.get_metric_history(run.info.run_id, key))
        return count

    assert sdk() == runs * 1000
    out = scratch / "mlflow-import"
    sdk_seconds = _best(sdk, repeat)
    ours = _best(
        lambda: import_runs("mlflow", str(database), logging_dir=out, progress=False),
        repeat,
        reset=lambda: shutil.rmtree(out, ignore_errors=True),
    )
    label = f"{runs} runs x 1,000 points"
    return [
        ("mlflow", label, sdk_seconds, "MlflowClient search_runs + get_metric_history"),
        ("", "", ours, "tracking import"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tracking import against the SDK's own reader")
    parser.add_argument("--only", choices=("tensorboard", "mlflow"), default=None)
    parser.add_argument("--points", type=int, default=1_000_000, help="TensorBoard points (default 1,000,000)")
    parser.add_argument("--runs", type=int, default=100, help="MLflow runs (default 100)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    rows: list[tuple[str, str, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="tracking-bench-import-") as folder:
        scratch = Path(folder)
        if args.only in (None, "tensorboard"):
            rows += bench_tensorboard(args.points, args.repeat, scratch)
        if args.only in (None, "mlflow"):
            rows += bench_mlflow(args.runs, args.repeat, scratch)
    print("\n| source | data | reader | seconds | import / SDK |")
    print("|---|---|---|---:|---:|")
    baseline = 0.0
    for source, data, seconds, reader in rows:
        if source:
            baseline = seconds
            print(f"| {source} | {data} | {reader} | {seconds:.2f} | 1.00 |")
        else:
            print(f"| | | {reader} | {seconds:.2f} | {seconds / baseline:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
