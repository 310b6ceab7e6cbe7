"""Importing SwanLab runs from their offline folders (local mode before 0.6.2): a run written with the swanlab SDK
directly, read back whole."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from tracking_core.kit import SourceError
from tracking_core.testing.sdk_runs import STEPS, write_swanlab
from tracking_core.testing.sdk_runs import SWANLAB_CONFIG as CONFIG
from tracking_swanlab.importer import read_runs
from tracking_swanlab.older import v0_5_8, v0_6_2
from tracking_swanlab.reader import read_run


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline run folder the swanlab SDK wrote."""
    return write_swanlab(tmp_path_factory.mktemp("swanlab-import")).source


def test_every_point_config_media_and_what_is_not_carried(written: Path) -> None:
    before = _tree(written.parent)
    [run] = list(read_runs(str(written.parent)))
    points = list(run.points)
    media = list(run.media)
    assert _tree(written.parent) == before

    stored = read_run(written)  # the package's reader, over SwanLab's DataStoreReader
    assert (run.backend, run.name, run.project, run.status) == ("swanlab", "sdk-run", "imports", "finished")
    assert run.source_id == f"imports/{written.name.rsplit('-', 1)[-1]}"
    assert run.config == CONFIG
    assert run.started is not None and run.ended is not None and run.started <= run.ended

    seen = [(point.key, point.step) for point in points]
    assert len(seen) == len(set(seen)) == 2 * STEPS
    assert {key: {p.step: p.value for p in points if p.key == key} for key in ("train/loss", "acc")} == {
        key: dict(history) for key, history in stored.scalar_history.items()
    }
    assert all(run.started <= point.time <= run.ended for point in points)  # SwanLab's own per-point times

    assert sorted((item.kind, item.key, item.step) for item in media) == [
        ("image", "pair", STEPS),
        ("image", "pair", STEPS),
        ("image", "sample", STEPS),
        ("text", "note", STEPS),
    ]
    assert all(Path(item.data).read_bytes().startswith(b"\x89PNG") for item in media if item.kind == "image")
    assert [item.data for item in media if item.kind == "text"] == ["a note"]
    not_carried = run.not_carried
    if v0_6_2.in_use():  # SwanLab 0.6.2-0.6.4's offline init puts its terminal capture back on: the lines are kept
        not_carried = [note for note in not_carried if not note.startswith("terminal output lines")]
    assert not_carried == ["media captions (sample), 1 time(s)"]


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_a_damaged_run_file_yields_the_run_up_to_there_then_names_the_file(
    written: Path, tmp_path: Path, damage: str
) -> None:
    if v0_5_8.in_use():  # the run folder and the store beside it; the damage goes into a column's log file
        shutil.copytree(written.parent, tmp_path / "swanlog")
        copy = tmp_path / "swanlog" / written.name
        [run_file] = [path for path in copy.glob("logs/*/*.log") if len(path.read_text().splitlines()) == STEPS][:1]
    else:
        copy = tmp_path / written.name
        shutil.copytree(written, copy)
        [run_file] = [*copy.glob("run-*.swanlab"), *copy.glob("backup.swanlab")]
    data = bytearray(run_file.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data[len(data) // 2] ^= 0xFF
    run_file.write_bytes(bytes(data))

    runs = read_runs(str(copy))
    run = next(runs)
    assert 0 < len(list(run.points)) < 2 * STEPS
    assert any("after the damage" in note for note in run.not_carried)
    with pytest.raises(SourceError) as caught:
        next(runs)
    assert caught.value.path == str(run_file) and "scalar(s)" in caught.value.imported


def test_not_a_run(tmp_path: Path) -> None:
    folder = tmp_path / "run-20260101_000000-x"
    folder.mkdir()
    if v0_5_8.in_use():  # a local store: the database beside the run folders
        (tmp_path / "runs.swanlab").write_bytes(b"not a SwanLab run file")
        (folder / "logs").mkdir()
    else:
        (folder / ("backup.swanlab" if v0_6_2.in_use() else "run-x.swanlab")).write_bytes(b"not a SwanLab run file")
    with pytest.raises(SourceError, match=r"not a SwanLab (run file|local store)"):
        list(read_runs(str(tmp_path)))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="no SwanLab run"):
        list(read_runs(str(tmp_path / "empty")))


def test_a_resumed_run_keeps_the_config_its_first_process_stored(tmp_path: Path) -> None:
    """Each process of a resumed run writes a folder of its own, and the one that resumed it stores no
    config of its own: the run's config is the one its folders hold together."""
    import tracking_core

    run = tracking_core.init("resumed", log_with="swanlab", logging_dir=tmp_path, config=CONFIG)
    run.log({"loss": 1.0}, step=0)
    assert run.finish().ok
    again = tracking_core.init("resumed", log_with="swanlab", logging_dir=tmp_path, resume=True)
    again.log({"loss": 0.5}, step=1)
    assert again.finish().ok
    assert len(list((tmp_path / "swanlog").glob("run-*"))) == 2
    imported = list(read_runs(str(tmp_path / "swanlog")))
    if v0_6_2.in_use():  # SwanLab 0.5.8-0.7.x write the resumed part as a SwanLab run of its own
        # (in the order of their folders' names, run-<time>-<random id>: two started within a second come either way)
        parts = sorted(([(p.step, p.value) for p in run.points], run.config) for run in imported)
        assert parts == [([(0, 1.0)], CONFIG), ([(1, 0.5)], {})]
        return
    [imported_run] = imported
    assert imported_run.config == CONFIG
    assert sorted((point.step, point.value) for point in imported_run.points) == [(0, 1.0), (1, 0.5)]


def test_a_store_of_the_other_sdk_line_says_which_swanlab_reads_it(tmp_path: Path) -> None:
    """Each SwanLab line reads only its own run file; the other one's is refused by name, not as damage."""
    folder = tmp_path / "run-20260101_000000-other"
    folder.mkdir()
    other, message = (
        ("run-other.swanlab", "SwanLab 0.8 or later") if v0_6_2.in_use() else ("backup.swanlab", "0.6.2 to 0.7.x")
    )
    (folder / other).write_bytes(b":SWL" + bytes(3))
    with pytest.raises(SourceError, match=message) as caught:
        list(read_runs(str(tmp_path)))
    assert caught.value.path == str(folder / other)


def test_a_local_store_is_read_with_swanboard_and_without_it_the_import_says_what_to_install(tmp_path: Path) -> None:
    """SwanLab 0.5.8 to 0.6.1 local mode: ``runs.swanlab`` (swanboard's database) beside the run folders."""
    import importlib.util

    folder = tmp_path / "swanlog" / "run-20260101_000000-abcd1234"
    (folder / "logs" / "0").mkdir(parents=True)
    (tmp_path / "swanlog" / "runs.swanlab").write_bytes(b"SQLite format 3\x00" + bytes(84))
    with pytest.raises(SourceError) as caught:
        list(read_runs(str(folder)))
    assert caught.value.path == str(tmp_path / "swanlog" / "runs.swanlab")
    if importlib.util.find_spec("swanboard") is None:
        assert "pip install 'swanboard==0.1.8b1' 'peewee<4'" in str(caught.value), caught.value
    else:
        assert "not a SwanLab local store" in str(caught.value), caught.value
