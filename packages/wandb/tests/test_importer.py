"""Importing W&B runs from their offline folders: a run written with the wandb SDK directly, read back whole.

The run is written once per module, in a fresh interpreter (W&B keeps process-wide state), with an
empty HOME; every test reads it through :func:`tracking_wandb.importer.read_runs`.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from tracking_core.kit import SourceError
from tracking_core.testing.sdk_runs import STEPS, write_wandb
from tracking_wandb.importer import read_runs
from tracking_wandb.reader import read_run
from tracking_wandb.transaction_log import Damaged, iter_records


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline run folder the wandb SDK wrote."""
    return write_wandb(tmp_path_factory.mktemp("wandb-import")).source


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


def test_one_reader_reads_a_log_being_written_and_refuses_it_for_an_import(written: Path, tmp_path: Path) -> None:
    """The same framing reader serves both: a log cut inside its last record is, for the read-back of a run
    still being written, the records before the cut; for an import, those records and then damage."""
    log = _log(written)
    whole = [record.SerializeToString() for record in iter_records(log)]
    cut = tmp_path / log.name
    cut.write_bytes(log.read_bytes()[:-3])

    being_written = [record.SerializeToString() for record in iter_records(cut)]
    assert being_written == whole[:-1]
    imported: list[bytes] = []
    with pytest.raises(Damaged, match="the file ends inside a record"):
        imported.extend(record.SerializeToString() for record in iter_records(cut, strict=True))
    assert imported == whole[:-1]


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
