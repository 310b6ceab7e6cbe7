"""``tracking demo``: a small real training run, logged to every installed backend, then read back.

The model is a logistic regression trained by mini-batch gradient descent on generated, linearly
separable-with-noise 2-D data, in plain Python so the demo runs wherever tracking-core does.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterable
from typing import Any

from .dispatcher import init
from .registry import get_available_trackers
from .tracker import GeneralTracker


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
    run = init("demo", log_with=names, logging_dir=logging_dir, config=config)
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
    learned = accuracy > 0.8 or steps < STEPS_TO_LEARN
    return 0 if report.ok and learned else 1


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
