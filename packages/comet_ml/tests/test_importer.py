"""Importing Comet experiments from offline archives: one written with comet_ml directly, read back whole."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest
from tracking_comet_ml.importer import read_runs
from tracking_comet_ml.reader import read_archive_history
from tracking_core.testing.sdk_runs import NESTED_CONFIG as CONFIG
from tracking_core.testing.sdk_runs import STEPS, write_comet_ml
from tracking_core.transfer.model import SourceError


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline archive comet_ml wrote."""
    return write_comet_ml(tmp_path_factory.mktemp("comet-import")).source


def test_every_point_config_media_and_what_is_not_carried(written: Path) -> None:
    before = _tree(written.parent)
    [run] = list(read_runs(str(written.parent)))
    points = list(run.points)
    media = list(run.media)
    assert _tree(written.parent) == before

    assert (run.backend, run.name, run.project) == ("comet_ml", "sdk-run", "imports")
    assert run.source_id == f"imports/{written.stem}"
    assert run.config == CONFIG  # Comet's "optimizer|name" nested again
    assert run.tags == {"dataset": "mnist", "tags": "baseline"}
    assert run.started is not None and run.ended is not None and run.started <= run.ended

    logged = [point for point in points if point.key in ("train/loss", "acc")]
    assert len({(p.key, p.step) for p in logged}) == len(logged) == 2 * STEPS  # every point once
    history = read_archive_history(written)  # the package's reader of the same messages
    assert {key: [(p.step, p.value) for p in logged if p.key == key] for key in ("train/loss", "acc")} == {
        key: history[key] for key in ("train/loss", "acc")
    }
    assert all(run.started <= point.time <= run.ended for point in points)  # Comet's millisecond times
    assert {point.key for point in points} - {"train/loss", "acc"} <= {"process duration"}  # Comet's own

    assert sorted((item.kind, item.key) for item in media) == [
        ("artifact", "preds.csv"),
        ("histogram", "weights"),
        ("image", "sample"),
        ("text", "text"),
    ]
    [image] = [item for item in media if item.kind == "image"]
    assert image.step == STEPS and image.data.startswith(b"\x89PNG")
    [text] = [item for item in media if item.kind == "text"]
    assert text.data == "a note"
    [histogram] = [item for item in media if item.kind == "histogram"]
    assert sum(histogram.data["counts"]) == 4 and len(histogram.data["edges"]) == len(histogram.data["counts"]) + 1
    [table] = [item for item in media if item.kind == "artifact"]
    assert Path(table.data).read_text().splitlines() == ["id,label", "0,cat", "1,dog"]
    counters = [note for note in run.not_carried if "the step or epoch counter" in note]
    assert sorted(counters) == [
        "Comet's curr_epoch parameter (the step or epoch counter), 1 time(s)",
        "Comet's curr_step parameter (the step or epoch counter), 1 time(s)",
    ]  # set_step and set_epoch: listed, not put in the config
    others = [note for note in run.not_carried if note not in counters]  # Comet's own, and epochs after set_epoch
    assert all("auto-logged parameter" in note or note.startswith("the epoch of each point") for note in others), others


def test_a_damaged_archive_names_the_file(written: Path, tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(written.read_bytes()[: written.stat().st_size // 2])
    with pytest.raises(SourceError, match="not a zip archive") as caught:
        list(read_runs(str(truncated)))
    assert caught.value.path == str(truncated)

    torn = tmp_path / written.name
    with zipfile.ZipFile(written) as source, zipfile.ZipFile(torn, "w") as target:
        for member in source.namelist():
            data = source.read(member)
            if member == "messages.json":
                lines = data.splitlines(keepends=True)
                data = b"".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:10]
            target.writestr(member, data)
    runs = read_runs(str(torn))
    run = next(runs)
    assert 0 < len(list(run.points)) < 2 * STEPS
    with pytest.raises(SourceError) as caught:
        next(runs)
    assert caught.value.path == str(torn) and "metric message(s)" in caught.value.imported


def test_not_an_archive(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no Comet offline archive"):
        list(read_runs(str(tmp_path)))
    placeholder = tmp_path / "key.zip"
    with zipfile.ZipFile(placeholder, "w"):
        pass  # what Comet leaves for a process that never ended
    with pytest.raises(SourceError, match=r"no experiment\.json"):
        list(read_runs(str(placeholder)))
