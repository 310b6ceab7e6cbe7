"""Throughput benchmark: sustained points per second per backend at 100 metrics per step.

Each case logs ``--steps`` steps of 100 metrics as fast as it can and is timed from the first call
until everything is durable, leaving the SDK's start-up out: for the SDK's own per-step call
(``tools/bench_direct/<backend>.py``, the fastest batch path each SDK offers to a training loop: one
dict per step), from after the run was opened; for this library, from when both the loop had begun
and the backend was ready until ``finish()`` returned (both delivery modes). Also says whether the
run finished within the default finish timeout with nothing spilled. With ``--rounds`` the three cases of a
backend run in turn in every round, and each round's rate is compared with that round's SDK call: on a
machine whose speed drifts, the ratio of neighbours holds where a rate alone does not.

    python tools/bench.py --throughput                            # every installed backend
    python tools/bench.py --throughput --backends mlflow,aim --steps 10000
    python tools/bench.py --throughput --steps 10000 --direct-steps 1000   # the SDKs' own calls on fewer steps
    python tools/bench.py --throughput --backends trackio,clearml --steps 5000 --rounds 3  # min/med/max
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import BACKENDS  # noqa: E402 - tools/ is not a package
from bench_loop import spread  # noqa: E402

METRICS = 100


def values_for(step: int) -> dict:
    return {f"layer{index:02d}/grad_norm": (step + index) / 1000.0 for index in range(METRICS)}


def case_direct(backend: str, steps: int, logging_dir: Path, delivery: str) -> dict:
    spec = importlib.util.spec_from_file_location(f"bench_direct_{backend}", HERE / "bench_direct" / f"{backend}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    log, finish = module.open_run(logging_dir)
    started = time.monotonic()
    for step in range(steps):
        log(values_for(step), step)
    finish()
    return {"seconds": time.monotonic() - started, "ok": True}


def case_ours(backend: str, steps: int, logging_dir: Path, delivery: str) -> dict:
    import tracking_core
    from tracking_core.run.dispatcher import DEFAULT_FINISH_TIMEOUT

    run = tracking_core.init("bench-throughput", log_with=backend, logging_dir=logging_dir, delivery=delivery)
    began = time.monotonic()
    for step in range(steps):
        run.log(values_for(step), step=step)
    report = run.finish()
    finished = time.monotonic()
    entry = report.backends[backend]
    ready = entry.ready_at or began
    return {
        "seconds": finished - max(began, ready),
        "ok": report.ok,
        "spilled": entry.spilled,
        "delivered": entry.delivered,
        "state": entry.state,
        "within_timeout": finished - began < DEFAULT_FINISH_TIMEOUT,
    }


CASES = {"direct": case_direct, "ours": case_ours}


def _run(kind: str, backend: str, steps: int, delivery: str = "thread", timeout: float = 1800) -> dict:
    with tempfile.TemporaryDirectory(prefix="tracking-bench-throughput-") as tmp:
        env = {**os.environ, "HOME": os.environ.get("HOME", tmp)}
        result_file = Path(tmp) / "result.json"
        command = [sys.executable, __file__, "--case", kind, backend, str(steps), delivery, tmp, str(result_file)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        if done.returncode != 0 or not result_file.exists():
            lines = (done.stderr or done.stdout).strip().splitlines()
            return {"error": lines[-1] if lines else f"exit {done.returncode}"}
        return json.loads(result_file.read_text())


def _rate(outcome: dict, points: int) -> float | None:
    return points / outcome["seconds"] if "seconds" in outcome else None


def _row(backend: str, rounds: list[dict[str, dict]], points: int, direct_points: int, steps: int) -> list[str]:
    """One backend's cells: rates and ratios over the rounds, each ratio against its own round's SDK call."""
    direct_rates = [rate for outcome in rounds if (rate := _rate(outcome["direct"], direct_points))]
    first_error = next((o["direct"].get("error") for o in rounds if "seconds" not in o["direct"]), None) or "-"
    cells = [backend, spread(direct_rates, "{:,.0f}") if direct_rates else first_error[:40]]
    verdicts = []
    for mode in ("thread", "process"):
        rates, ratios, late = [], [], []
        for outcome in rounds:
            result = outcome[mode]
            rate = _rate(result, points)
            if rate is None:
                continue
            rates.append(rate)
            direct = _rate(outcome["direct"], direct_points)
            if direct:
                ratios.append(rate / direct)
            if not (result["within_timeout"] and result["ok"]):
                late.append(result)
        if not rates:
            cells += [next(o[mode].get("error", "-") for o in rounds)[:40], "-"]
            continue
        cells += [spread(rates, "{:,.0f}"), spread(ratios, "{:.2f}x") if ratios else "-"]
        if not late:
            verdicts.append(f"{mode}: yes")
        else:  # what finish() did with the rest: every step either delivered or spilled, once
            worst = late[0]
            verdicts.append(
                f"{mode}: no in {len(late)} of {len(rates)} ({worst['state']}, {worst['delivered']:,} delivered + "
                f"{worst['spilled']:,} spilled of {steps:,})"
            )
    return [*cells, ", ".join(verdicts)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--backends", default=None, help="comma-separated (default: every installed backend)")
    parser.add_argument(
        "--direct-steps",
        type=int,
        default=None,
        help="steps for the SDK-direct case (default: --steps); its rate is steady, and slow SDKs take long",
    )
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds: min / median / max per cell")
    parser.add_argument("--case", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        kind, backend, steps, delivery, logging_dir, result = args.case
        Path(result).write_text(json.dumps(CASES[kind](backend, int(steps), Path(logging_dir), delivery)))
        return 0
    wanted = (
        args.backends.split(",")
        if args.backends
        else [b for b in BACKENDS if importlib.util.find_spec(f"tracking_{b}")]
    )
    print(
        f"tracking throughput bench: {args.steps} steps x {METRICS} metrics per case "
        f"(SDK direct: {args.direct_steps or args.steps} steps), {args.rounds} round(s), python {sys.version.split()[0]}"
    )
    header = [
        "backend",
        "SDK direct pts/s",
        "threads pts/s",
        "vs direct",
        "process pts/s",
        "vs direct",
        "finished in time",
    ]
    points = args.steps * METRICS
    direct_steps = args.direct_steps or args.steps
    outcomes: dict[str, list[dict[str, dict]]] = {backend: [] for backend in wanted}
    for round_index in range(args.rounds):
        for backend in wanted:
            has_direct = (HERE / "bench_direct" / f"{backend}.py").exists()
            outcome = {"direct": _run("direct", backend, direct_steps) if has_direct else {}}
            outcome.update({mode: _run("ours", backend, args.steps, mode) for mode in ("thread", "process")})
            outcomes[backend].append(outcome)
        if args.rounds > 1:
            print(f"  round {round_index + 1}/{args.rounds} done", file=sys.stderr)
    rows = [_row(backend, outcomes[backend], points, direct_steps * METRICS, args.steps) for backend in wanted]
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for index, row in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
