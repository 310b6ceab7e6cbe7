"""Importing ClearML tasks from offline sessions: one written with clearml directly, read back whole."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from tracking_clearml.importer import read_runs
from tracking_clearml.reader import OfflineSession
from tracking_core.testing.sdk_runs import STEPS, write_clearml
from tracking_core.transfer.model import SourceError


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline session folder clearml wrote (its zip beside it)."""
    return write_clearml(tmp_path_factory.mktemp("clearml-import")).source


@pytest.mark.parametrize("form", ["zip", "folder"])
def test_every_point_config_media_and_what_is_not_carried(written: Path, form: str) -> None:
    source = written.parent if form == "zip" else written  # a folder of sessions prefers each one's zip
    before = _tree(written.parent)
    [run] = list(read_runs(str(source)))
    points = list(run.points)
    media = list(run.media)
    assert _tree(written.parent) == before
    assert run.location == str(written.with_suffix(".zip") if form == "zip" else written)

    assert (run.backend, run.name, run.project) == ("clearml", "sdk-run", "imports")
    assert run.source_id == f"imports/{written.name}"
    assert run.config == {"lr": 0.1, "optimizer": {"name": "adam", "eps": 1e-8}, "steps": 20, "amp": True}
    assert run.tags == {"tags": "baseline", "task_type": "training"}

    session = OfflineSession(written)  # the package's reader of the same session
    assert len({(p.key, p.step) for p in points}) == len(points) == 2 * STEPS  # every point once
    assert {key: [(p.step, p.value) for p in points if p.key == key] for key in ("loss", "acc/val")} == {
        key: session.scalar_history()[key] for key in ("loss", "acc/val")
    }
    stamps = {
        (e["metric"], e["variant"], e["iter"]): int(e["timestamp"]) / 1000
        for e in session.events("training_stats_scalar")
    }
    assert all(p.time == stamps[("loss", "train", p.step)] for p in points if p.key == "loss")

    jpeg, png = sorted(media, key=lambda item: item.key != "sample/rgb")
    assert (jpeg.kind, jpeg.key, jpeg.step) == ("image", "sample/rgb", STEPS)
    assert jpeg.data.startswith(b"\xff\xd8")  # ClearML stores an array as JPEG
    assert (png.kind, png.key, png.step) == ("image", "chart/png", STEPS)
    assert png.data.startswith(b"\x89PNG")  # and a file as it is
    assert run.not_carried == ["single value 'best', 1 time(s)", "the console log (log.jsonl)"]


def test_a_damaged_session_names_the_file(written: Path, tmp_path: Path) -> None:
    archive = written.with_suffix(".zip")
    truncated = tmp_path / archive.name
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(SourceError, match="not a zip archive") as caught:
        list(read_runs(str(truncated)))
    assert caught.value.path == str(truncated)

    torn = tmp_path / written.name
    shutil.copytree(written, torn)
    metrics = torn / "metrics.jsonl"
    data = metrics.read_bytes()
    metrics.write_bytes(data[: len(data) // 2])
    runs = read_runs(str(torn))
    run = next(runs)
    assert len(list(run.points)) < 2 * STEPS
    assert any("after the damage" in note for note in run.not_carried)
    with pytest.raises(SourceError) as caught:
        next(runs)
    assert caught.value.path == str(torn) and "scalar event(s)" in caught.value.imported


def test_not_a_session(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no ClearML offline session"):
        list(read_runs(str(tmp_path)))
