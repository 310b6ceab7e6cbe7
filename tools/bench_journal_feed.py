"""Journal-feed benchmark: how the delivery process should get the records, over the socket or from the journal.

Two ways for a run in process mode to feed its delivery process, compared on what they cost the
training process and how long a record takes to get there:

* ``socket`` (today): ``init(..., log_with=["jsonl", probe], delivery="process")``. ``log()`` queues each
  record; the link's feeder thread pickles batches of them onto the socket; the journal (``jsonl``) is
  written in the delivery process, beside the other backends (here a probe that stores nothing).
* ``tail``: the training process writes the journal itself (``init(..., log_with=["jsonl"],
  delivery="thread")``: the jsonl worker's own batching and flush policy) and a second process, niced
  as the delivery process is, tails the file: it reads the new whole lines every ``--poll`` seconds and
  json-decodes them (a prototype of a delivery process fed from the journal).

The loop is the one of ``tools/bench_loop.py`` (pure-Python work that holds the GIL, 8 scalars per
step), paced by its work to ~16,000 and ~4,000 points/s. Every case runs in a fresh process after the
machine settled; each round runs no tracking, both feeds (in alternating order) and no tracking again.
Printed per rate and feed, as medians over the rounds (min-max in brackets):

* train CPU µs/pt: the training process's CPU (every thread) from the loop's start until ``finish()``
  returned, beyond the no-tracking loop run just before it, per logged point. The ``no tracking
  (again)`` row is two identical no-tracking loops compared the same way: the noise of this column.
* bg threads µs/pt: the CPU of the training process's threads other than the loop's own over that time
  (the link's feeder and event reader, or the journal's worker; the run's samplers in both), per point;
  no baseline is subtracted, so it is far less noisy.
* log() µs: wall time inside one ``log()`` call, on average.
* latency p50/p99/max ms: from ``log()`` (the record's timestamp) until the delivery process holds the
  decoded record (unpickled from the socket, or read and json-decoded from the journal).
* delivery CPU µs/pt: the receiving process's CPU from its first record until the run ended, per point
  (for ``socket`` this includes writing the journal there).

    python tools/bench_journal_feed.py                           # 16000 and 4000 points/s, 3 rounds
    python tools/bench_journal_feed.py --rates 16000 --seconds 8 --rounds 5 --poll 0.005
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_loop import _loop, _process_cpu, _settle, calibrate  # noqa: E402 - tools/ is not a package
from tracking_core import GeneralTracker  # noqa: E402

POINTS_PER_STEP = 8
#: the tailer's pause when the journal has no new whole line (the link's feeder lingers as long)
DEFAULT_POLL = 0.02
PROBE_FILE = "probe-latency.json"

# -- the delivery process's side of ``socket``: when it received each record ------------------------
_received: list[float] = []
_first_cpu: list[float] = []


def _watch_the_host() -> None:
    """In the delivery process (``python -m tracking_core.process.host`` imports the probe's module before it
    serves): note, per metrics record, the time from its ``log()`` until the host has unpickled it."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    host = getattr(main, "Host", None)
    if host is None or spec is None or spec.name != "tracking_core.process.host":
        return
    handle = host._handle

    def _handle(self: Any, message: Any) -> None:
        if message.kind == "records":
            now = time.time()
            if not _first_cpu:
                _first_cpu.append(time.process_time())
            _received.extend(now - record.timestamp for record, _ in message.items if record.kind == "log")
        handle(self, message)

    host._handle = _handle


_watch_the_host()


class Probe(GeneralTracker):
    """A backend that stores nothing: the delivery process's other backend, and where its timings are written."""

    name = "probe"
    requires_logging_directory = False

    @property
    def tracker(self) -> None:
        return None

    def finish(self) -> None:
        if self.run_context is None:
            return
        cpu = time.process_time() - _first_cpu[0] if _first_cpu else 0.0
        summary = {"latency": _latency_summary(_received), "records": len(_received), "delivery_cpu": cpu}
        (Path(self.run_context.run_dir) / PROBE_FILE).write_text(json.dumps(summary))


def _latency_summary(latencies: list[float]) -> dict[str, float] | None:
    if not latencies:
        return None
    ordered = sorted(latencies)
    return {
        "p50": ordered[len(ordered) // 2],
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "max": ordered[-1],
    }


# -- the tailing reader (``tail``) ------------------------------------------------------------------
def tail(journal: Path, result: Path, poll: float) -> None:
    """Read the journal's new whole lines as they are written, until its ``finish`` line; note each metrics
    record's time from ``log()`` until it was decoded here."""
    from tracking_core.process.host import lower_priority

    lower_priority()  # as the delivery process does
    latencies: list[float] = []
    first_cpu: float | None = None
    while not journal.exists():
        time.sleep(poll)
    result.with_suffix(".ready").touch()
    pending = b""
    finished = False
    with open(journal, "rb") as handle:
        while not finished:
            chunk = handle.read()
            if not chunk:
                time.sleep(poll)
                continue
            if first_cpu is None:
                first_cpu = time.process_time()
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()  # empty, or a line not yet whole
            records = [json.loads(line) for line in lines if line]
            now = time.time()
            for record in records:
                if record.get("type") == "metrics":
                    latencies.append(now - record["time"])
                elif record.get("type") == "finish":
                    finished = True
    cpu = time.process_time() - (first_cpu or 0.0)
    summary = {"latency": _latency_summary(latencies), "records": len(latencies), "delivery_cpu": cpu}
    result.write_text(json.dumps(summary))


# -- one case, in a fresh process ---------------------------------------------------------------------
def _measured_loop(log: Any, steps: int, units: int) -> dict[str, float]:
    """The loop (bench_loop's), then ``finish``; the training process's CPU over both, and its loop thread's."""
    cpu, thread = _process_cpu(), time.thread_time()
    wall, _, in_log = _loop(log, steps, units)
    return {"cpu": _process_cpu() - cpu, "thread": time.thread_time() - thread, "loop": wall, "in_log": in_log}


def case(kind: str, steps: int, units: int, folder: Path, poll: float) -> dict[str, Any]:
    import tracking_core

    if kind == "none":
        return _measured_loop(lambda values, step: None, steps, units)
    tailer = None
    if kind == "socket":
        import bench_journal_feed  # the probe by its module's name: the delivery process imports it from there

        run = tracking_core.init(
            "feed", log_with=["jsonl", bench_journal_feed.Probe], logging_dir=folder, delivery="process"
        )
        run.state.link.wait_ready()
    else:
        run = tracking_core.init("feed", log_with=["jsonl"], logging_dir=folder, delivery="thread")
        result = folder / "tail.json"
        command = [sys.executable, __file__, "--tail", str(Path(run.run_dir) / "journal.jsonl"), str(result), str(poll)]
        tailer = subprocess.Popen(command)
        while not result.with_suffix(".ready").exists() and tailer.poll() is None:
            time.sleep(0.01)
    time.sleep(0.3)  # the backends have started: the loop times delivery, not start-up
    cpu, thread = _process_cpu(), time.thread_time()
    wall, _, in_log = _loop(lambda values, step: run.log(values, step=step), steps, units)
    report = run.finish(timeout=120)
    outcome: dict[str, Any] = {
        "cpu": _process_cpu() - cpu,
        "thread": time.thread_time() - thread,
        "loop": wall,
        "in_log": in_log,
        "ok": report.ok,
    }
    if tailer is not None:
        tailer.wait(60)
        received = json.loads((folder / "tail.json").read_text())
    else:
        received = json.loads((Path(run.run_dir) / PROBE_FILE).read_text())
    return {**outcome, **received}


def _run(kind: str, steps: int, units: int, poll: float, settle: float) -> dict[str, Any]:
    _settle(settle)
    with tempfile.TemporaryDirectory(prefix="tracking-bench-feed-") as tmp:
        result = Path(tmp) / "result.json"
        command = [sys.executable, __file__, "--case", kind, str(steps), str(units), tmp, str(result), str(poll)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp)
        if done.returncode != 0 or not result.exists():
            lines = (done.stderr or done.stdout).strip().splitlines()
            return {"error": lines[-1] if lines else f"exit {done.returncode}"}
        return json.loads(result.read_text())


def _cell(values: list[float], fmt: str) -> str:
    """Median over the rounds, with min-max."""
    if not values:
        return "-"
    if len(values) == 1:
        return fmt.format(values[0])
    median = fmt.format(statistics.median(values))
    return f"{median} [{fmt.format(min(values))}..{fmt.format(max(values))}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="16000,4000", help="points/s of the loop, comma-separated")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each loop")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--poll", type=float, default=DEFAULT_POLL, help="the tailer's pause on no new line, s")
    parser.add_argument("--settle", type=float, default=10.0, help="longest wait for an idle CPU before each run")
    parser.add_argument("--case", nargs=6, help=argparse.SUPPRESS)
    parser.add_argument("--tail", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tail:
        journal, result, poll = args.tail
        tail(Path(journal), Path(result), float(poll))
        return 0
    if args.case:
        kind, steps, units, folder, result, poll = args.case
        outcome = case(kind, int(steps), int(units), Path(folder), float(poll))
        Path(result).write_text(json.dumps(outcome))
        return 0

    rates = [int(rate) for rate in args.rates.split(",")]
    # each step's work: the step time of the rate, less the ~15 µs its log() and values cost (calibrated once,
    # on a settled machine: a busy moment during calibration would make every later loop run faster)
    _settle(args.settle)
    per_ms = calibrate(0.001)
    plans = {
        rate: (
            max(1, int(args.seconds * rate / POINTS_PER_STEP)),
            max(1, int(per_ms * (POINTS_PER_STEP / rate - 15e-6) * 1000)),
        )
        for rate in rates
    }
    print(
        f"journal feed bench: {args.seconds:g} s loops at {', '.join(f'{r} points/s' for r in rates)} "
        f"({POINTS_PER_STEP} scalars a step), {args.rounds} rounds, tailer poll {args.poll * 1000:g} ms, "
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    results: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for round_index in range(args.rounds):
        feeds = ["socket", "tail"] if round_index % 2 == 0 else ["tail", "socket"]
        for rate in rates:
            steps, units = plans[rate]
            none = _run("none", steps, units, args.poll, args.settle)
            for kind in [*feeds, "none"]:
                outcome = _run(kind, steps, units, args.poll, args.settle)
                if "error" not in outcome and "error" not in none:
                    outcome["beyond"] = (outcome["cpu"] - none["cpu"]) / (steps * POINTS_PER_STEP) * 1e6
                    outcome["rate"] = steps * POINTS_PER_STEP / outcome["loop"]
                results.setdefault((rate, kind), []).append(outcome)
        print(f"  round {round_index + 1}/{args.rounds} done", file=sys.stderr)

    header = [
        "rate",
        "feed",
        "points/s",
        "train CPU µs/pt",
        "bg threads µs/pt",
        "log() µs",
        "latency p50 ms",
        "latency p99 ms",
        "latency max ms",
        "delivery CPU µs/pt",
        "note",
    ]
    rows = []
    labels = {"socket": "socket (today)", "tail": "tail journal", "none": "no tracking (again)"}
    for (rate, kind), outcomes in results.items():
        steps = plans[rate][0]
        points = steps * POINTS_PER_STEP
        good = [o for o in outcomes if "error" not in o]
        latency = [o["latency"] for o in good if o.get("latency")]
        notes = sorted({o["error"][:60] for o in outcomes if "error" in o})
        notes += [f"{o['records']}/{steps} records" for o in good if "records" in o and o["records"] != steps]
        notes += ["not ok" for o in good if o.get("ok") is False]
        rows.append(
            [
                str(rate),
                labels[kind],
                _cell([o["rate"] for o in good if "rate" in o], "{:.0f}"),
                _cell([o["beyond"] for o in good if "beyond" in o], "{:.2f}"),
                _cell([(o["cpu"] - o["thread"]) / points * 1e6 for o in good], "{:.2f}"),
                _cell([o["in_log"] * o["loop"] / steps * 1e6 for o in good], "{:.1f}"),
                _cell([entry["p50"] * 1000 for entry in latency], "{:.1f}"),
                _cell([entry["p99"] * 1000 for entry in latency], "{:.1f}"),
                _cell([entry["max"] * 1000 for entry in latency], "{:.0f}"),
                _cell([o["delivery_cpu"] / points * 1e6 for o in good if "delivery_cpu" in o], "{:.2f}"),
                "; ".join(notes[:2]),
            ]
        )
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for index, row in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
