"""Importing Aim runs from a repo: a run written with Aim's SDK directly, read back whole, the repo untouched."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from tracking_aim.importer import read_runs
from tracking_core.testing.sdk_runs import NESTED_CONFIG as CONFIG
from tracking_core.testing.sdk_runs import STEPS, write_aim
from tracking_core.transfer.model import SourceError


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, list[float]]]:
    """A repo with one run the aim SDK wrote (metrics in two contexts, text, images, a distribution)."""
    sdk_run = write_aim(tmp_path_factory.mktemp("aim-import"))
    return sdk_run.source, sdk_run.info["run_hash"], {}


def test_every_point_config_media_and_what_is_not_carried(written: tuple[Path, str, dict]) -> None:
    root, run_hash, _ = written
    before = _tree(root)
    [run] = list(read_runs(str(root)))
    points = list(run.points)
    media = list(run.media)
    assert _tree(root) == before  # the repo is read from a copy: not a byte changes

    assert (run.backend, run.source_id, run.name, run.project, run.status) == (
        "aim",
        run_hash,
        "sdk-run",
        "imports",
        "finished",
    )
    assert run.config == {**CONFIG, "dataset": "mnist"}
    assert run.tags == {"tags": "baseline"}
    assert run.started is not None and run.ended is not None and run.started <= run.ended

    seen = [(point.key, point.step) for point in points]
    assert len(seen) == len(set(seen)) == 2 * STEPS
    loss = {point.step: point.value for point in points if point.key == "loss"}
    acc = {point.step: point.value for point in points if point.key == "acc {'subset': 'val'}"}
    assert loss == {step: 1.0 / (step + 1) for step in range(STEPS)}
    assert acc == {step: step / STEPS for step in range(STEPS)}
    assert all(point.time is not None and run.started <= point.time <= run.ended for point in points)

    kinds = sorted((item.kind, item.key, item.step) for item in media)
    assert kinds == [
        ("histogram", "weights", STEPS),
        ("image", "pair", STEPS),
        ("image", "pair", STEPS),
        ("image", "sample", STEPS),
        ("text", "note", 3),
    ]
    assert all(item.data.startswith(b"\x89PNG") for item in media if item.kind == "image")
    [histogram] = [item for item in media if item.kind == "histogram"]
    assert histogram.data == {"counts": [1, 2, 3], "edges": [0.0, 1.0, 2.0, 3.0]}
    assert [item.data for item in media if item.kind == "text"] == ["a note"]
    assert run.not_carried == ["the epoch of each point of \"acc {'subset': 'val'}\"", "image captions (sample)"]


def test_a_damaged_repo_names_the_file(written: tuple[Path, str, dict], tmp_path: Path) -> None:
    root, run_hash, _ = written
    copy = tmp_path / "repo"
    shutil.copytree(root, copy)
    chunks = copy / ".aim" / "seqs" / "chunks" / run_hash
    for table in chunks.glob("*.sst"):
        table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    with pytest.raises(SourceError) as caught:
        for run in read_runs(str(copy)):
            list(run.points)
    assert caught.value.path == str(chunks) and str(chunks) in str(caught.value)
    assert caught.value.imported in ("no run", "0 points")  # found at the run's epochs, or at its points


def test_not_a_repo(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="not an Aim repo"):
        list(read_runs(str(tmp_path)))
