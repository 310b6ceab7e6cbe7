"""``tracking demo``: a small real training run, logged to every installed backend, then read back.

The model is a logistic regression trained by mini-batch gradient descent on generated, linearly
separable-with-noise 2-D data, in plain Python so the demo runs wherever tracking-core does.
"""

from __future__ import annotations

import logging
import math
import os
import random
import shlex
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..contract.registry import get_available_trackers
from ..contract.tracker import GeneralTracker
from ..notices import logger
from ..run.dispatcher import init


def make_data(n: int, seed: int = 0) -> list[tuple[float, float, int]]:
    rng = random.Random(seed)
    points = []
    for _ in range(n):
        x1, x2 = rng.gauss(0, 1), rng.gauss(0, 1)
        label = 1 if 1.5 * x1 - 2.0 * x2 + 0.5 + rng.gauss(0, 0.5) > 0 else 0
        points.append((x1, x2, label))
    return points


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def evaluate(weights: list[float], data: list[tuple[float, float, int]]) -> tuple[float, float]:
    loss = correct = 0.0
    for x1, x2, y in data:
        p = min(max(_sigmoid(weights[0] * x1 + weights[1] * x2 + weights[2]), 1e-12), 1 - 1e-12)
        loss -= y * math.log(p) + (1 - y) * math.log(1 - p)
        correct += (p > 0.5) == bool(y)
    return loss / len(data), correct / len(data)


def _image(weights: list[float], size: int = 32) -> Any:
    """The decision function over [-3, 3]^2 as an HxWx3 uint8 image (needs numpy)."""
    import numpy as np

    grid = np.linspace(-3, 3, size)
    x1, x2 = np.meshgrid(grid, -grid)
    p = 1 / (1 + np.exp(-(weights[0] * x1 + weights[1] * x2 + weights[2])))
    return (np.stack([p, 0.2 + 0 * p, 1 - p], axis=-1) * 255).astype("uint8")


#: Steps after which the demo's model must have learned (validation accuracy above 0.8).
STEPS_TO_LEARN = 50


def run_demo(logging_dir: str = "runs", steps: int = 200, backends: str | None = None) -> int:
    """Train, log to ``backends`` (default: all installed) and read back; 0 when every backend took the run.

    ``steps=0`` logs the untrained model's evaluation, image and table only.
    """
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"steps must be a whole number, 0 or more, got {steps!r}")
    names = [b.strip() for b in backends.split(",")] if backends else get_available_trackers()
    train, valid = make_data(2000, seed=0), make_data(500, seed=1)
    config: dict[str, Any] = {
        "model": "logistic-regression",
        "optimizer": {"name": "sgd", "lr": 0.5, "momentum": 0.9},
        "batch_size": 64,
        "steps": steps,
        "data": {"train": len(train), "valid": len(valid)},
    }
    print(f"tracking demo: {steps} steps of logistic regression on {len(train)} generated points -> {', '.join(names)}")
    views = _ViewNotices()
    logger.addHandler(views)
    try:
        run = init("demo", log_with=names, logging_dir=logging_dir, config=config)
        run.flush(timeout=120)  # every backend has said where it writes
    finally:
        logger.removeHandler(views)
    rng = random.Random(2)
    weights, velocity = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    log_seconds = 0.0
    for step in range(steps):
        lr = 0.5 * 0.5 * (1 + math.cos(math.pi * step / steps))
        batch = rng.sample(train, config["batch_size"])
        grad = [0.0, 0.0, 0.0]
        for x1, x2, y in batch:
            error = _sigmoid(weights[0] * x1 + weights[1] * x2 + weights[2]) - y
            grad[0] += error * x1
            grad[1] += error * x2
            grad[2] += error
        for i in range(3):
            velocity[i] = 0.9 * velocity[i] - lr * grad[i] / len(batch)
            weights[i] += velocity[i]
        values = {"train": {"loss": evaluate(weights, batch)[0]}, "lr": lr}
        if step % 20 == 0 or step == steps - 1:
            values["valid/loss"], values["valid/accuracy"] = evaluate(weights, valid)
        started = time.perf_counter()
        run.log(values, step=step)
        log_seconds += time.perf_counter() - started
    loss, accuracy = evaluate(weights, valid)
    last_step = max(steps - 1, 0)
    run.log({"summary": f"final validation accuracy {accuracy:.3f}"}, step=last_step)
    try:
        run.log_images({"decision_function": _image(weights)}, step=last_step)
    except ImportError:
        pass
    run.log_table(
        "predictions",
        columns=["x1", "x2", "label", "p"],
        data=[
            [x1, x2, y, round(_sigmoid(weights[0] * x1 + weights[1] * x2 + weights[2]), 4)] for x1, x2, y in valid[:8]
        ],
        step=last_step,
    )
    report = run.finish()
    cost = f"; mean caller cost of log(): {log_seconds / steps * 1e6:.1f} µs" if steps else ""
    print(f"validation loss {loss:.4f}, accuracy {accuracy:.3f}{cost}")
    print()
    print(report)
    print()
    print("read back from each backend's own storage:")
    print(read_back_table(run.trackers, expected_points=steps))
    print()
    print(next_steps(run.run_dir, logging_dir, [t.name for t in run.trackers], views))
    learned = accuracy > 0.8 or steps < STEPS_TO_LEARN
    return 0 if report.ok and learned else 1


class _ViewNotices(logging.Handler):
    """Keeps the backends' "where it went / how to view it" notices, to repeat them at the end."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.levelno == logging.INFO and ":" in message.split(" ", 1)[0]:
            self.lines.append(message)


def tracking_command() -> str:
    """How the user runs ``tracking`` from where they stand: through the developer script when the demo
    came through it, ``tracking`` when that is on PATH for this interpreter, else ``python -m tracking_core``."""
    prefix = os.environ.get("TRACKING_CLI_PREFIX")
    if prefix:
        return f"{prefix} tracking"
    found = shutil.which("tracking")
    if found and Path(found).absolute().parent == Path(sys.executable).absolute().parent:
        return "tracking"
    return f"{shlex.quote(sys.executable)} -m tracking_core"


def _shown(path: str | os.PathLike[str]) -> str:
    """A path as the user types it: relative to where they stand when inside it, quoted for the shell."""
    here = Path(os.environ.get("TRACKING_CLI_CWD") or os.getcwd()).resolve()
    absolute = Path(path).resolve()
    try:
        shown = str(absolute.relative_to(here))
    except ValueError:
        shown = str(absolute)
    return shlex.quote(shown)


def next_steps(run_dir: Any, logging_dir: str, backends: list[str], views: _ViewNotices) -> str:
    """The demo's last lines: commands that work as printed, and where each backend wrote."""
    tracking = tracking_command()
    prefix = os.environ.get("TRACKING_CLI_PREFIX")
    lines = ["next:"]
    if run_dir is not None:
        lines.append(f"  {tracking} show {_shown(run_dir)}    # what the run logged")
        lines.append(f"  {tracking} runs {_shown(logging_dir)}    # every run there")
        others = [name for name in get_available_trackers() if name not in backends and name != "jsonl"]
        target = others[0] if others else "jsonl"
        lines.append(f"  {tracking} replay {_shown(run_dir)} --to {target} --new-run    # a copy in another backend")
    if views.lines:
        lines.append(
            "where each backend wrote it" + (f" (run its viewer through: {prefix} ...)" if prefix else "") + ":"
        )
        lines += [f"  {line}" for line in views.lines]
    return "\n".join(lines)


def read_back_table(trackers: Iterable[GeneralTracker], expected_points: int) -> str:
    """Per backend: how many series and points its storage holds, and the last train/loss it has."""
    rows = [("backend", "series", "points", "train/loss points", "last train/loss")]
    for tracker in trackers:
        try:
            stored = tracker.read_back_metrics()
        except NotImplementedError:
            rows.append((tracker.name, "-", "-", "-", "(no local reader)"))
            continue
        except Exception as error:  # a reader failing is a finding, not a crash
            rows.append((tracker.name, "-", "-", "-", f"read failed: {type(error).__name__}: {error}"[:60]))
            continue
        loss = stored.get("train/loss", {})
        last = f"{loss[max(loss)]:.4f}" if loss else "-"
        mark = "" if len(loss) == expected_points else f" (expected {expected_points})"
        rows.append((tracker.name, str(len(stored)), str(sum(map(len, stored.values()))), f"{len(loss)}{mark}", last))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
