"""Benchmark: what one ``log`` of 8 scalars costs the training loop, and how long until the data is durable.

Every case runs in a fresh Python process (imports and SDK state do not leak between cases) that
has imported torch, as a training script has, before its clocks start (``load_training_stack``), and
prints one row; the table compares them side by side in one run, with the floor measured the same way:
a dict copy plus a queue put handed to a draining thread (and once more with the dispatcher's value
checks making the copy, to show what they cost on their own). The ``hung`` row is a backend whose
call hangs until the loop ends: its ``max`` is the one wait before its queue goes to its spill.

    python tools/bench.py                       # core cases + every installed backend
    python tools/bench.py --steps 2000 --backends mlflow,aim
    python tools/bench.py --only-core
    python tools/bench.py --loop                # the loop benchmark: tools/bench_loop.py
    python tools/bench.py --throughput          # points/s at 100 metrics per step: tools/bench_throughput.py
    python tools/bench.py --import              # tracking import vs the SDK's reader: tools/bench_import.py

Rows per backend: ``direct`` (the SDK's own per-step call, tools/bench_direct/<name>.py),
``reference`` (accelerate's tracker, when ``accelerate`` is installed) and ``dispatcher``
(this project: ``async``, its backends in threads, and ``process``, in a delivery process). Columns: caller-side p50/p99/max per call, time from the first call until
``finish()`` returned with everything durable (``loop+finish``), the SDK's start-up (``start``: before
the loop for the direct and reference rows, in the backend's worker for the dispatcher), the part of
the time-to-durable that start-up does not explain (``durable after start``: for the dispatcher, from
when both the loop had begun and the backend was ready until ``finish()`` returned), and the total
from creating the run to ``finish()`` returning. The loop does no training work, so the dispatcher
cannot hide the SDK's start-up behind it here as it does in a real run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The table of built-in backends, read from its file: importing tracking_core here would pre-load it in the cases.
BUILT_INS = runpy.run_path(str(HERE.parent / "packages/core/src/tracking_core/contract/builtins.py"))["BUILT_INS"]
BACKENDS = [row.name for row in BUILT_INS if row.sdk is not None]
#: accelerate.tracking's class for each backend that has one: the reference the cases compare with
REFERENCE_CLASSES = {row.name: row.accelerate_class for row in BUILT_INS if row.accelerate_class}


def values_for(step: int) -> dict:
    return {
        "train/loss": 1.0 / (step + 1),
        "train/acc": step / 2000.0,
        "lr": 3e-4 * 0.999**step,
        "grad_norm": 0.5 + step % 7,
        "throughput": 1000.0 + step % 13,
        "epoch": step // 100,
        "val/loss": 0.9 / (step + 2),
        "val/acc": 0.5 + step / 5000.0,
    }


def _timed_loop(log, steps: int) -> list[float]:
    latencies = []
    clock = time.perf_counter_ns
    for step in range(steps):
        values = values_for(step)
        started = clock()
        log(values, step)
        latencies.append(clock() - started)
    return latencies


# --- cases, each run in its own process --------------------------------------------------------


def case_floor(steps: int, logging_dir: Path, checks: bool = False) -> dict:
    """The floor: a dict copy plus a queue put handed to a draining thread.

    ``checks``: the floor with the dispatcher's value checks (``tracking_core.intake.values.snapshot``, which
    also makes the copy) in place of the plain copy, so that one run shows what they add.
    """
    import queue
    import threading

    q: queue.SimpleQueue = queue.SimpleQueue()
    done = threading.Event()

    def drain():
        while q.get() is not None:
            pass
        done.set()

    threading.Thread(target=drain, daemon=True).start()
    if checks:
        from tracking_core.intake.values import snapshot as copy
    else:
        copy = dict
    latencies = _timed_loop(lambda values, step: q.put((copy(values), step)), steps)
    started = time.perf_counter()
    q.put(None)
    done.wait()
    return {"latencies": latencies, "finish": time.perf_counter() - started, "init": 0.0}


def _scripted_tracker_class(name: str, call):
    """A backend that stores nothing and runs ``call`` on each ``log``: what a slow or hung SDK costs."""
    from tracking_core import GeneralTracker

    class Scripted(GeneralTracker):
        requires_logging_directory = False

        def __init__(self, run_name, **kwargs):
            super().__init__()

        @property
        def tracker(self):
            return None

        def log(self, values, step=None, **kwargs):
            call()

    Scripted.name = name
    return Scripted


#: the hung backend's case logs this many records: three times its queue, so that it fills while the call hangs
HUNG_STEPS = 30_000


def case_core(steps: int, logging_dir: Path, backend: str, mode: str) -> dict:
    """``mode``: ``async`` (threads), ``blocking`` or ``process`` (``delivery="process"``)."""
    import tracking_core

    log_with = backend
    release = None
    if backend == "sleepy-1ms":  # 1 ms a call, like a synchronous SDK round trip
        tracking_core.register_tracker_class(_scripted_tracker_class("sleepy", lambda: time.sleep(0.001)))
        log_with = "sleepy"
    elif backend == "hung":  # calls hang until the loop has ended, like requests to a server that froze
        import threading

        release, steps = threading.Event(), HUNG_STEPS
        tracking_core.register_tracker_class(_scripted_tracker_class("hung", lambda: release.wait(600)))
        log_with = "hung"
    started = time.perf_counter()
    run = tracking_core.Dispatcher(
        log_with=log_with,
        logging_dir=logging_dir,
        blocking=mode == "blocking",
        delivery="process" if mode == "process" else "thread",
    )
    run.init_trackers("bench")
    init = time.perf_counter() - started
    loop_began = time.monotonic()
    latencies = _timed_loop(lambda values, step: run.log(values, step=step), steps)
    started = time.perf_counter()
    if release is not None:
        release.set()  # the server answers again: the backend gets what waited in its spill
    report = run.finish(timeout=600)
    finished = time.monotonic()
    backend = next(iter(report.backends.values()))
    # From the moment both the loop had begun and the backend was ready, until everything was durable:
    # the part of the run the backend's own start-up does not explain.
    after_start = finished - max(loop_began, backend.ready_at or loop_began)
    return {
        "latencies": latencies,
        "finish": time.perf_counter() - started,
        "init": init,
        "ok": report.ok,
        "after_start": after_start,
        "start": backend.start_seconds,
    }


def case_direct(steps: int, logging_dir: Path, backend: str) -> dict:
    import importlib.util

    # loaded by path under another name: tools/bench_direct/wandb.py must not shadow the wandb SDK
    spec = importlib.util.spec_from_file_location(f"bench_direct_{backend}", HERE / "bench_direct" / f"{backend}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    started = time.perf_counter()
    log, finish = module.open_run(logging_dir)
    init = time.perf_counter() - started
    latencies = _timed_loop(log, steps)
    started = time.perf_counter()
    finish()
    return {"latencies": latencies, "finish": time.perf_counter() - started, "init": init}


REFERENCE_ENV = {
    "wandb": {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": "{dir}"},
    "comet_ml": {"COMET_OFFLINE_DIRECTORY": "{dir}", "COMET_API_KEY": ""},
    "clearml": {"CLEARML_OFFLINE_MODE": "1", "CLEARML_CACHE_DIR": "{dir}"},
    "swanlab": {"SWANLAB_MODE": "offline", "SWANLAB_LOG_DIR": "{dir}"},
    "trackio": {"TRACKIO_DIR": "{dir}"},
    "mlflow": {"MLFLOW_TRACKING_URI": "sqlite:///{dir}/mlflow.db", "MLFLOW_DISABLE_TELEMETRY": "true"},
}


def case_reference(steps: int, logging_dir: Path, backend: str) -> dict:
    import accelerate.tracking as reference

    cls = getattr(reference, REFERENCE_CLASSES[backend])
    started = time.perf_counter()
    from accelerate.state import PartialState

    PartialState()  # as Accelerator does: the reference's trackers log through it
    if cls.requires_logging_directory:
        tracker = cls("bench", str(logging_dir))
    elif backend == "mlflow":
        tracker = cls("bench", logging_dir=str(logging_dir))
    elif backend == "comet_ml":
        tracker = cls("bench", online=False)  # comet_ml.start(online=False): offline, no API key
    else:
        tracker = cls("bench")
    tracker.start()
    init = time.perf_counter() - started
    latencies = _timed_loop(lambda values, step: tracker.log(values, step=step), steps)
    started = time.perf_counter()
    tracker.finish()
    return {"latencies": latencies, "finish": time.perf_counter() - started, "init": init}


# --- orchestration -------------------------------------------------------------------------------


def _run_case(args: list[str], steps: int, env_extra: dict | None = None, timeout: float = 1800) -> dict:
    with tempfile.TemporaryDirectory(prefix="tracking-bench-") as tmp:
        env = {**os.environ, "HOME": os.environ.get("HOME", tmp)}
        for key, value in (env_extra or {}).items():
            env[key] = value.format(dir=tmp)
        result_file = Path(tmp) / "result.json"  # not stdout: SDKs print banners there
        command = [sys.executable, __file__, "--case", *args, "--steps", str(steps), "--logging-dir", tmp]
        command += ["--result", str(result_file)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        if result.returncode != 0 or not result_file.exists():
            lines = (result.stderr or result.stdout).strip().splitlines()
            return {"error": lines[-1] if lines else f"exit {result.returncode}"}
        return json.loads(result_file.read_text())


def _summary(latencies_ns: list[int]) -> tuple[float, float, float]:
    ordered = sorted(latencies_ns)
    p50 = statistics.median(ordered) / 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1000
    return p50, p99, ordered[-1] / 1000


def _row(label: str, what: str, result: dict, floor: tuple[float, float] | None) -> list[str]:
    if "error" in result:
        return [label, what, "-", "-", "-", "-", "-", "-", "-", "-", result["error"][:70]]
    p50, p99, worst = _summary(result["latencies"])
    durable = sum(result["latencies"]) / 1e9 + result["finish"]
    ratio = f"{p50 / floor[0]:.1f}x / {p99 / floor[1]:.1f}x" if floor else "-"
    note = "" if result.get("ok", True) else "report not ok"
    total = result["init"] + durable
    # time-to-durable not explained by SDK start-up: the reference starts before its loop, so its
    # loop+finish already excludes start-up; the dispatcher starts in its worker during the loop
    after_start = result.get("after_start", durable)
    cells = [f"{p50:,.1f}", f"{p99:,.1f}", f"{worst:,.0f}", ratio]
    start = result.get("start", result["init"])
    times = [f"{start:.2f}", f"{durable:.2f}", f"{after_start:.2f}", f"{total:.2f}"]
    return [label, what, *cells, *times, note]


def _print_table(rows: list[list[str]]) -> None:
    header = ["case", "path", "p50 µs", "p99 µs", "max µs", "vs floor p50/p99"]
    header += ["start s", "loop+finish s", "durable after start s", "total s", "note"]
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    right = {2, 3, 4, 6, 7, 8, 9}
    for index, row in enumerate(table):
        print("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())
        if index == 0:
            print("  ".join("-" * w for w in widths))


def load_training_stack() -> None:
    """Import what a training script holds before it creates a run: torch (and numpy with it), if installed.

    Every case does this before its clocks start. Otherwise the reference rows would get those imports
    free (``import accelerate`` imports torch) while every other row paid for the parts its SDK shares
    with them (numpy, protobuf...), and the memory figures would charge Accelerate for torch itself.

    Then one full garbage collection, as building a model and a data pipeline would have caused: right
    after torch's import (170,000 new objects) the collector's oldest generation is due, and whichever
    case allocated next paid a 70-90 ms pause that says nothing about it.
    """
    import gc

    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    gc.collect()


def compile_installed_code() -> None:
    """Byte-compile this project's packages and the environment's site-packages, as pip does at install.

    With ``PYTHONDONTWRITEBYTECODE`` (CI shells and this machine set it) an import never writes
    bytecode, and uv, unlike pip, does not compile at install (unless ``UV_COMPILE_BYTECODE``): every
    case would then compile the SDKs from source at each start -- MLflow, Aim, W&B and TensorBoard
    took 3.9 s to import that way against 1.5 s from bytecode -- which users' installs never pay.
    Up-to-date files are skipped, so a second run costs a second or two of checks.
    """
    import compileall
    import sysconfig

    for name in ["tracking_core", *(f"tracking_{backend}" for backend in BACKENDS)]:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(location, quiet=1)
    compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=2, workers=0)


def main() -> int:
    if "--case" not in sys.argv[1:]:
        compile_installed_code()
    if "--loop" in sys.argv[1:]:  # the loop benchmark (tools/bench_loop.py): what tracking costs a training loop
        import bench_loop

        return bench_loop.main([arg for arg in sys.argv[1:] if arg != "--loop"])
    if "--throughput" in sys.argv[1:]:  # tools/bench_throughput.py: sustained points/s at 100 metrics per step
        import bench_throughput

        return bench_throughput.main([arg for arg in sys.argv[1:] if arg != "--throughput"])
    if "--import" in sys.argv[1:]:  # tools/bench_import.py: tracking import against the SDK's own reader
        import bench_import

        return bench_import.main([arg for arg in sys.argv[1:] if arg != "--import"])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--backends", default=None, help="comma-separated (default: every installed backend)")
    parser.add_argument("--only-core", action="store_true")
    parser.add_argument("--case", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--logging-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.case:
        load_training_stack()
        kind, *rest = args.case
        if kind == "floor":
            result = case_floor(args.steps, args.logging_dir, checks=rest == ["checks"])
        elif kind == "core":
            result = case_core(args.steps, args.logging_dir, rest[0], rest[1])
        elif kind == "direct":
            result = case_direct(args.steps, args.logging_dir, rest[0])
        else:
            result = case_reference(args.steps, args.logging_dir, rest[0])
        args.result.write_text(json.dumps(result))
        return 0

    print(
        f"tracking bench: {args.steps} log() calls of 8 scalars per case, each case in a fresh process; python {sys.version.split()[0]}"
    )
    floor_result = _run_case(["floor"], args.steps)
    floor = _summary(floor_result["latencies"])[:2]
    rows = [_row("floor", "dict copy + queue put", floor_result, None)]
    rows.append(_row("floor", "+ value checks", _run_case(["floor", "checks"], args.steps), floor))
    for backend in ("jsonl", "sleepy-1ms"):
        for mode in ("async", "blocking"):
            rows.append(_row(backend, f"dispatcher {mode}", _run_case(["core", backend, mode], args.steps), floor))
    hung_result = _run_case(["core", "hung", "async"], args.steps)
    hung = _row("hung", "dispatcher async", hung_result, floor)
    if "latencies" in hung_result:  # after the one wait, the calls that moved a full queue to the spill
        spilling = sorted(hung_result["latencies"])[-2] / 1e6
        hung[-1] = hung[-1] or f"{HUNG_STEPS:,} calls, one SDK call hung throughout; next-slowest {spilling:.0f} ms"
    rows.append(hung)
    if not args.only_core:
        wanted = (
            args.backends.split(",")
            if args.backends
            else [b for b in BACKENDS if importlib.util.find_spec(f"tracking_{b}")]
        )
        has_reference = importlib.util.find_spec("accelerate") is not None
        for backend in wanted:
            if (HERE / "bench_direct" / f"{backend}.py").exists():
                rows.append(_row(backend, "SDK direct", _run_case(["direct", backend], args.steps), floor))
            if has_reference and backend in REFERENCE_CLASSES:
                rows.append(
                    _row(
                        backend,
                        "reference (accelerate)",
                        _run_case(["reference", backend], args.steps, REFERENCE_ENV.get(backend)),
                        floor,
                    )
                )
            for mode in ("async", "process"):
                rows.append(_row(backend, f"dispatcher {mode}", _run_case(["core", backend, mode], args.steps), floor))
    _print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
