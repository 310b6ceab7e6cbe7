"""Importing W&B runs from their offline folders: a run written with the wandb SDK directly, read back whole.

The run is written once per module, in a fresh interpreter (W&B keeps process-wide state), with an
empty HOME; every test reads it through :func:`tracking_wandb.importer.read_runs`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracking_core.transfer.model import SourceError
from tracking_wandb.importer import read_runs
from tracking_wandb.transaction_log import read_run

STEPS = 20
WRITE = """
import json, os, sys, time
import numpy as np
import wandb

root = sys.argv[1]
run = wandb.init(
    project="imports", name="sdk-run", dir=root, mode="offline",
    config={"lr": 0.1, "optimizer": {"name": "adam", "betas": [0.9, 0.999]}, "scheduler": None},
    tags=["baseline", "small"], group="sweep-1", notes="written by wandb itself",
    settings=wandb.Settings(x_disable_stats=True, console="off", disable_git=True),
)
for step in range(STEPS):
    run.log({"train/loss": 1.0 / (step + 1), "acc": step / STEPS, "phase": f"p{step % 2}"}, step=step)
run.log({"eval": {"loss": 0.5, "acc": 0.75}}, step=STEPS - 1)
pixels = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
run.log({
    "sample": wandb.Image(pixels),
    "pair": [wandb.Image(pixels), wandb.Image(255 - pixels)],
    "weights": wandb.Histogram(np_histogram=([1, 2, 3], [0.0, 1.0, 2.0, 3.0])),
    "preds": wandb.Table(columns=["id", "label"], data=[[0, "cat"], [1, "dog"]]),
}, step=STEPS)
run.summary["best_acc"] = 0.95
run.save(os.path.join(root, "notes.txt"), base_path=root, policy="now")
folder = os.path.dirname(run.dir)
run.finish()
print(json.dumps({"folder": folder}))
"""


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline run folder the wandb SDK wrote."""
    root = tmp_path_factory.mktemp("wandb-import")
    (root / "notes.txt").write_text("kept as a file\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("WANDB_")}
    env.update(
        HOME=str(root / "home"),
        WANDB_SILENT="true",
        WANDB_CACHE_DIR=str(root / "cache"),
        WANDB_DATA_DIR=str(root / "data"),
        WANDB_CONFIG_DIR=str(root / "config"),
    )
    script = f"STEPS = {STEPS}\n" + textwrap.dedent(WRITE)
    done = subprocess.run(
        [sys.executable, "-c", script, str(root)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(json.loads(done.stdout.strip().splitlines()[-1])["folder"])


def test_every_point_config_media_and_what_is_not_carried(written: Path) -> None:
    before = _tree(written.parent)
    [run] = list(read_runs(str(written.parent.parent)))  # WANDB_DIR: the run is found below it
    points = list(run.points)
    media = list(run.media)
    assert _tree(written.parent) == before  # read only

    stored = read_run(written)  # the package's own reader of the same log
    assert run.backend == "wandb" and run.source_id == f"imports/{stored.run.run_id}"
    assert (run.name, run.project, run.status) == ("sdk-run", "imports", "finished")
    assert run.started is not None and run.ended is not None and run.started <= run.ended
    assert run.config == {"lr": 0.1, "optimizer": {"name": "adam", "betas": [0.9, 0.999]}, "scheduler": None}
    assert run.tags == {"group": "sweep-1", "notes": "written by wandb itself", "tags": "baseline,small"}

    nested = sorted((p.key, p.step, p.value) for p in points if p.key.startswith("eval."))
    assert nested == [("eval.acc", STEPS - 1, 0.75), ("eval.loss", STEPS - 1, 0.5)]
    points = [point for point in points if not point.key.startswith("eval.")]  # a nested dict, flattened
    seen = [(point.key, point.step) for point in points]
    assert len(seen) == len(set(seen)) == 3 * STEPS  # every point once
    for point in points:
        row = stored.history[point.step]
        assert point.value == row[point.key]
        assert point.time == row["_timestamp"] and abs(point.time - run.started) < 120
    assert {point.value for point in points if point.key == "phase"} == {"p0", "p1"}
    assert sorted(p.value for p in points if p.key == "train/loss") == sorted(1.0 / (s + 1) for s in range(STEPS))

    kinds = sorted((item.kind, item.key) for item in media)
    assert kinds == [
        ("artifact", "notes.txt"),
        ("artifact", "requirements.txt"),
        ("histogram", "weights"),
        ("image", "pair"),
        ("image", "pair"),
        ("image", "sample"),
        ("table", "preds"),
    ]
    for item in media:
        if item.kind == "image":
            assert item.step == STEPS and Path(item.data).read_bytes().startswith(b"\x89PNG")
    [table] = [item for item in media if item.kind == "table"]
    assert table.data == {"columns": ["id", "label"], "data": [[0, "cat"], [1, "dog"]]}
    [histogram] = [item for item in media if item.kind == "histogram"]
    assert histogram.data == {"counts": [1, 2, 3], "edges": [0.0, 1.0, 2.0, 3.0]}
    assert run.not_carried == ["summary values set apart from the history: best_acc"]


def test_reimport_is_stable(written: Path) -> None:
    first = [(run.source_id, len(list(run.points))) for run in read_runs(str(written))]
    again = [(run.source_id, len(list(run.points))) for run in read_runs(str(written / f"{_log(written).name}"))]
    assert first == again


def _log(folder: Path) -> Path:
    [log] = folder.glob("run-*.wandb")
    return log


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_a_damaged_log_yields_the_run_up_to_there_then_names_the_file(
    written: Path, tmp_path: Path, damage: str
) -> None:
    copy = tmp_path / written.name
    shutil.copytree(written, copy, symlinks=True)
    log = _log(copy)
    data = bytearray(log.read_bytes())
    if damage == "truncated":
        data = data[: len(data) * 2 // 3]
    else:
        data[len(data) * 2 // 3] ^= 0xFF
    log.write_bytes(bytes(data))

    runs = read_runs(str(copy))
    run = next(runs)
    points = list(run.points)
    assert 0 < len(points) < 3 * STEPS or run.status == "damaged"
    assert any("after the damage" in note for note in run.not_carried)
    with pytest.raises(SourceError) as caught:
        next(runs)
    assert caught.value.path == str(log) and "history row" in caught.value.imported


def test_not_a_wandb_folder(tmp_path: Path) -> None:
    (tmp_path / "run-x.wandb").write_bytes(b"not a transaction log at all")
    with pytest.raises(SourceError, match="not a W&B transaction log"):
        list(read_runs(str(tmp_path)))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="no W&B run"):
        list(read_runs(str(tmp_path / "empty")))
