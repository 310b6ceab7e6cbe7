"""Loop benchmark: what tracking costs a CPU-bound training loop, and how long until ``finish()`` returns.

The loop is pure Python (each step ~1.2 ms of arithmetic that holds the GIL, as a data pipeline or an
interpreted model step does), logging 8 scalars per step. Cases: no tracking, each backend and all of
them through this library (``delivery="thread"`` and ``delivery="process"``), and the same through
Accelerate's trackers (when ``accelerate`` is
installed). Every case runs in a fresh process that has imported torch first (when installed: a training
script has, and the deltas of memory and time then belong to tracking alone), once the machine is idle again, right after a
no-tracking run it is compared with; rounds interleave the cases so that a busy moment of the
machine hits all of them alike. Printed per case, over the rounds: the loop's time against that
no-tracking loop (min / median / max; the "no tracking (again)" row shows how far two identical loops
differ on this machine), the largest share of the loop its thread spent not running (waiting for the
GIL or the CPU: wall time minus the thread's CPU time), the time from the loop's end until
``finish()`` returned, from creating the run until ``finish()`` returned, and the training process's
peak RSS.

    python tools/bench.py --loop                        # every installed backend, 3 rounds
    python tools/bench.py --loop --backends tensorboard,mlflow,aim --rounds 5 --steps 2000
    python tools/bench.py --loop --fast --backends tensorboard,mlflow,aim   # a fast loop: see below

``--fast`` is a loop at the rate of a small model or an RL loop: ~0.5 ms of work per step, 15,000
steps (16,000 points/s), this library's two delivery modes only. Its table adds "log() share": the
part of the loop spent inside ``log()`` calls, which is the ~2 µs a call costs plus any time a call
waited for room in a full queue (a backend that does not keep up).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import BACKENDS, REFERENCE_CLASSES, REFERENCE_ENV, load_training_stack, values_for  # noqa: E402 - tools/ is not a package

WORK_SECONDS = 0.0012
#: ``--fast``: the work per step and the steps of a loop that logs 16,000 points/s for ~7.5 s
FAST_WORK_SECONDS, FAST_STEPS = 0.0005, 15_000


def busy(units: int) -> int:
    """Pure-Python work that holds the GIL, like an interpreted training step."""
    total = 0
    for index in range(units):
        total += index * index % 7
    return total


def calibrate(seconds: float = WORK_SECONDS) -> int:
    """How many ``busy`` units take ``seconds`` on this machine (the median of a few tries)."""
    units = 10_000
    while True:
        started = time.perf_counter()
        busy(units)
        took = time.perf_counter() - started
        if took > 0.02:
            break
        units *= 2
    per_unit = []
    for _ in range(5):
        started = time.perf_counter()
        busy(units)
        per_unit.append((time.perf_counter() - started) / units)
    return max(1, int(seconds / statistics.median(per_unit)))


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _process_cpu() -> float:
    """CPU seconds this process has used so far, every thread (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _delivery_process_cpu(run) -> float | None:
    """CPU seconds the run's delivery process has used so far (``None`` without one, or without /proc)."""
    state = getattr(run, "state", None)  # a commit before the run's RunState kept the link as run._link
    link = state.link if state is not None else getattr(run, "_link", None)
    process = getattr(link, "process", None)
    if process is None:
        return None
    try:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, in ticks


def _loop(log, steps: int, units: int) -> tuple[float, float, float]:
    """The loop's wall time, the share of it its thread was not running (waiting for the GIL or a CPU),
    and the share of it spent inside ``log()`` (its cost plus any wait for room in a full queue)."""
    clock = time.perf_counter
    in_log = 0.0
    started, cpu = clock(), time.thread_time()
    for step in range(steps):
        busy(units)
        values = values_for(step)
        called = clock()
        log(values, step)
        in_log += clock() - called
    wall, spent = clock() - started, time.thread_time() - cpu
    return wall, (wall - spent) / wall, in_log / wall


def case_none(steps: int, units: int, logging_dir: Path, backends: list[str]) -> dict:
    created, cpu = time.perf_counter(), _process_cpu()
    loop, stalled, in_log = _loop(lambda values, step: None, steps, units)
    spent = _process_cpu() - cpu
    return {**_timings(loop, stalled, in_log, created, time.perf_counter()), "cpu_loop": spent, "cpu_total": spent}


def case_ours(steps: int, units: int, logging_dir: Path, backends: list[str], delivery: str = "thread") -> dict:
    import tracking_core

    created, cpu = time.perf_counter(), _process_cpu()
    run = tracking_core.init("bench-loop", log_with=backends, logging_dir=logging_dir, delivery=delivery)
    loop, stalled, in_log = _loop(lambda values, step: run.log(values, step=step), steps, units)
    ended, cpu_loop = time.perf_counter(), _process_cpu() - cpu
    report = run.finish(timeout=600)
    return {
        **_timings(loop, stalled, in_log, created, ended),
        # what the training process paid in CPU (every thread: the SDKs' work in threads mode), from init to
        # the loop's end and to finish()'s return, and what the delivery process used (process mode)
        "cpu_loop": cpu_loop,
        "cpu_total": _process_cpu() - cpu,
        "cpu_delivery": _delivery_process_cpu(run),
        "ok": report.ok,
        "not_ok": [f"{name}: {entry.state}" for name, entry in report.backends.items() if not entry.ok],
        "why": [f"{name}: {entry.last_error}" for name, entry in report.backends.items() if entry.last_error],
    }


def _timings(loop: float, stalled: float, in_log: float, created: float, ended: float) -> dict:
    """A case's figures, taken as ``finish()`` has just returned."""
    finished = time.perf_counter()
    return {
        "loop": loop,
        "stalled": stalled,
        "in_log": in_log,
        "finish": finished - ended,
        "total": finished - created,
        "rss": _peak_rss_mb(),
    }


def _reference_tracker(backend: str, logging_dir: Path):
    import accelerate.tracking as reference

    cls = getattr(reference, REFERENCE_CLASSES[backend])
    if cls.requires_logging_directory:
        return cls("bench-loop", str(logging_dir))
    if backend == "mlflow":
        return cls("bench-loop", logging_dir=str(logging_dir))
    if backend == "comet_ml":
        return cls("bench-loop", online=False)
    return cls("bench-loop")


def case_accelerate(steps: int, units: int, logging_dir: Path, backends: list[str]) -> dict:
    from accelerate.state import PartialState

    created = time.perf_counter()
    PartialState()  # as Accelerator does
    trackers = [_reference_tracker(backend, logging_dir) for backend in backends]
    for tracker in trackers:  # Accelerator.init_trackers starts them in the training process, in turn
        tracker.start()

    def log(values: dict, step: int) -> None:
        for tracker in trackers:  # Accelerator.log calls each tracker in turn
            tracker.log(values, step=step)

    loop, stalled, in_log = _loop(log, steps, units)
    ended = time.perf_counter()
    for tracker in trackers:
        tracker.finish()
    return _timings(loop, stalled, in_log, created, ended)


def case_process(steps: int, units: int, logging_dir: Path, backends: list[str]) -> dict:
    return case_ours(steps, units, logging_dir, backends, delivery="process")


CASES = {"none": case_none, "ours": case_ours, "process": case_process, "accelerate": case_accelerate}


def _cpu_idle_fraction(window: float = 0.5) -> float:
    """Share of the machine's CPU time that was idle over ``window`` seconds (1.0 where /proc is absent)."""
    try:
        before = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        time.sleep(window)
        after = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 1.0
    spent = [b - a for a, b in zip(before, after)]
    return (spent[3] + spent[4]) / max(1, sum(spent))  # idle + iowait


def _settle(limit: float = 20.0) -> None:
    """Wait until what the previous case left behind (an SDK's service process, a delivery process
    closing its backends) has stopped using the CPU, so it does not slow the next case's loop."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and _cpu_idle_fraction() < 0.9:
        pass


def _run(kind: str, backends: list[str], steps: int, units: int, settle: float, timeout: float = 1800) -> dict:
    _settle(settle)
    with tempfile.TemporaryDirectory(prefix="tracking-bench-loop-") as tmp:
        env = {**os.environ, "HOME": os.environ.get("HOME", tmp)}
        if kind == "accelerate":
            for backend in backends:
                env.update({key: value.format(dir=tmp) for key, value in REFERENCE_ENV.get(backend, {}).items()})
        result_file = Path(tmp) / "result.json"
        command = [sys.executable, __file__, "--case", kind, ",".join(backends), str(steps), str(units), tmp]
        command.append(str(result_file))
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        if done.returncode != 0 or not result_file.exists():
            lines = (done.stderr or done.stdout).strip().splitlines()
            return {"error": lines[-1] if lines else f"exit {done.returncode}"}
        return json.loads(result_file.read_text())


def spread(values: list[float], fmt: str) -> str:
    """min / median / max over the rounds."""
    if not values:
        return "-"
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=None, help=f"default 2000 ({FAST_STEPS} with --fast)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--fast", action="store_true", help=f"~{FAST_WORK_SECONDS * 1000:.1f} ms of work per step, threads and process"
    )
    parser.add_argument("--backends", default=None, help="comma-separated (default: every installed backend)")
    parser.add_argument("--no-single", action="store_true", help="only the all-backends cases")
    parser.add_argument(
        "--paths",
        default=None,
        help="comma-separated: ours (threads), process, accelerate (default: all three; ours,process with --fast)",
    )
    parser.add_argument(
        "--settle", type=float, default=20.0, help="longest wait for an idle CPU before each run, seconds"
    )
    parser.add_argument(
        "--units", type=int, default=None, help="work units per step, as an earlier run printed (default: calibrate)"
    )
    parser.add_argument("--case", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        kind, backends, steps, units, logging_dir, result = args.case
        load_training_stack()
        outcome = CASES[kind](int(steps), int(units), Path(logging_dir), [b for b in backends.split(",") if b])
        Path(result).write_text(json.dumps(outcome))
        return 0

    wanted = (
        args.backends.split(",")
        if args.backends
        else [b for b in BACKENDS if importlib.util.find_spec(f"tracking_{b}")]
    )
    with_reference = importlib.util.find_spec("accelerate") is not None
    work = FAST_WORK_SECONDS if args.fast else WORK_SECONDS
    steps = args.steps or (FAST_STEPS if args.fast else 2000)
    units = args.units or calibrate(work)  # on a busy machine the calibration moves: pin it to compare runs
    groups = [] if args.no_single else [[backend] for backend in wanted]
    if len(wanted) > 1:
        groups.append(wanted)
    paths = (args.paths or ("ours,process" if args.fast else "ours,process,accelerate")).split(",")
    # no tracking against no tracking: how far two identical loops differ on this machine
    cases = [("none", [])]
    cases += [(kind, group) for group in groups for kind in ("ours", "process") if kind in paths]
    if with_reference and "accelerate" in paths:
        cases += [("accelerate", group) for group in groups if set(group) <= REFERENCE_CLASSES.keys()]
    print(
        f"tracking loop bench: {steps} steps of ~{work * 1000:.1f} ms pure-Python work ({units} units), "
        f"8 scalars per step, {args.rounds} interleaved rounds, python {sys.version.split()[0]}"
    )
    results: dict[tuple[str, str], list[dict]] = {}
    baseline: list[float] = []
    for round_index in range(args.rounds):
        for kind, group in cases:
            # Each case is paired with a no-tracking run just before it: the ratio compares two loops
            # that met the same moment of a busy machine.
            none = _run("none", [], steps, units, args.settle)
            baseline.append(none["loop"])
            outcome = _run(kind, group, steps, units, args.settle)
            if "error" not in outcome and "error" not in none:
                outcome["ratio"] = outcome["loop"] / none["loop"]
                outcome["cpu_ratio"] = outcome["cpu_loop"] / none["cpu_loop"]
                # the training process's CPU beyond the no-tracking loop's, per logged point (8 a step)
                outcome["cpu_per_point_us"] = (outcome["cpu_total"] - none["cpu_loop"]) / (steps * 8) * 1e6
            if not group:
                label = "-"
            elif len(group) < len(wanted) or len(wanted) == 1:
                label = "+".join(group)
            else:
                label = f"all {len(group)}"
            results.setdefault((kind, label), []).append(outcome)
        print(f"  round {round_index + 1}/{args.rounds} done", file=sys.stderr)
    header = [
        "path",
        "backends",
        "loop vs none (min/med/max)",
        "train CPU vs none (loop)",
        "train CPU µs/point",
        "delivery CPU s",
        "loop stalled % (max)",
        "log() share % (max)",
        "finish after loop s",
        "create->finish s",
        "peak RSS MB",
        "note",
    ]
    rows = []
    rss_none = statistics.median(o["rss"] for o in results[("none", "-")])
    for (kind, label), outcomes in results.items():
        good = [o for o in outcomes if "error" not in o]
        errors = [o["error"] for o in outcomes if "error" in o]
        rss = statistics.median(o["rss"] for o in good) if good else None
        note = (errors[0][:60] if errors else "") or (
            "not ok: " + ", ".join(sorted({item for o in good for item in o.get("not_ok", [])}))
            if any(not o.get("ok", True) for o in good)
            else ""
        )
        rows.append(
            [
                {
                    "none": "no tracking (again)",
                    "ours": "tracking (threads)",
                    "process": "tracking (process)",
                    "accelerate": "accelerate",
                }[kind],
                label,
                spread([o["ratio"] for o in good if "ratio" in o], "{:.3f}x"),
                spread([o["cpu_ratio"] for o in good if "cpu_ratio" in o], "{:.3f}x"),
                spread([o["cpu_per_point_us"] for o in good if "cpu_per_point_us" in o], "{:.2f}"),
                spread([o["cpu_delivery"] for o in good if o.get("cpu_delivery") is not None], "{:.2f}"),
                f"{max(o['stalled'] for o in good) * 100:.1f}" if good else "-",
                f"{max(o.get('in_log', 0.0) for o in good) * 100:.1f}" if good else "-",
                spread([o["finish"] for o in good], "{:.2f}"),
                spread([o["total"] for o in good], "{:.2f}"),
                f"{rss:.0f} (+{rss - rss_none:.0f})" if rss is not None else "-",
                note,
            ]
        )
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for index, row in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))
    print(f"no-tracking loop (the run before each case): {spread(baseline, '{:.2f}')} s")
    for (kind, label), outcomes in results.items():
        for why in sorted({line for outcome in outcomes for line in outcome.get("why", [])}):
            print(f"{kind} {label}: {why}")  # why a backend was not ok: the table has room for its state only
    return 0


if __name__ == "__main__":
    sys.exit(main())
