"""``tracking import dvclive``: a folder written with ``dvclive.Live`` directly, imported, replayed,
read back from DVCLive's files. The two halves of the round-trip matrix for DVCLive (see
``tracking_core.testing.transfer``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from tracking_core.cli import main
from tracking_core.store.journal import read_journal
from tracking_core.testing.sdk_runs import write_dvclive
from tracking_core.testing.transfer import (
    CANONICAL_CONFIG,
    canonical_journal,
    check_imported,
    check_points,
)
from tracking_core.transfer.importing import import_runs
from tracking_core.transfer.model import SourceError


def _digest(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_sdk_written_folder_imports_with_steps_times_params_images_artifacts(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "exp" / "dvclive"
    write_dvclive(source)
    before = _digest(tmp_path / "exp")
    assert main(["import", "dvclive", str(tmp_path / "exp"), "--logging-dir", str(tmp_path / "runs"), "--quiet"]) == 0
    capsys.readouterr()
    assert _digest(tmp_path / "exp") == before
    (run_dir,) = [path.parent for path in (tmp_path / "runs").glob("*/*/run.json")]
    check_imported(run_dir)
    records = list(read_journal(run_dir))
    (images,) = [r for r in records if r["type"] == "images"]
    assert images["step"] == 6 and list(images["images"]) == ["samples"]
    (artifact,) = [r for r in records if r["type"] == "artifact"]
    assert Path(artifact["local_path"]).read_text() == "weights"
    origin = json.loads((run_dir / "run.json").read_text())["imported_from"]
    assert origin["source_id"] == str(source.resolve())
    assert main(["import", "dvclive", str(source), "--logging-dir", str(tmp_path / "runs"), "--quiet"]) == 0
    assert len(list((tmp_path / "runs").glob("*/*/run.json"))) == 1  # the same folder: the same run


def test_a_cut_off_metric_file_is_a_clear_error_naming_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_dvclive(tmp_path / "dvclive")
    damaged = tmp_path / "dvclive" / "plots" / "metrics" / "train" / "loss.tsv"
    damaged.write_text(damaged.read_text()[:-12], encoding="utf-8")
    with pytest.raises(SourceError, match="damaged") as error:
        list(__import__("tracking_dvclive.importer", fromlist=["x"]).read_runs(str(tmp_path / "dvclive")))
    assert error.value.path == str(damaged) and "train/loss up to line" in str(error.value)


def test_an_imported_run_replays_into_jsonl_and_dvclive_with_every_point_once(tmp_path, monkeypatch, dvclive_files):
    monkeypatch.chdir(tmp_path)
    write_dvclive(tmp_path / "exp" / "dvclive")
    (imported,) = import_runs("dvclive", str(tmp_path / "exp"), logging_dir=tmp_path / "runs", progress=False).runs
    assert (
        main(
            [
                "replay",
                str(imported.run_dir),
                "--to",
                "jsonl",
                "--new-run",
                "--logging-dir",
                str(tmp_path / "j"),
                "--quiet",
            ]
        )
        == 0
    )
    (copy,) = [path.parent for path in (tmp_path / "j").glob("*/*/journal.jsonl")]
    check_imported(copy)
    assert (
        main(
            [
                "replay",
                str(imported.run_dir),
                "--to",
                "dvclive",
                "--new-run",
                "--logging-dir",
                str(tmp_path / "d"),
                "--quiet",
            ]
        )
        == 0
    )
    (folder,) = (tmp_path / "d").glob("*/*/dvclive")
    check_points(dvclive_files.tsv_rows(folder))  # rows as lists: each step once
    assert dvclive_files.params(folder) == CANONICAL_CONFIG


def test_the_canonical_journal_replays_into_dvclive(tmp_path, monkeypatch, dvclive_files):
    """Replay half of the matrix: journal -> DVCLive, read back from its files (no times: DVCLive keeps
    them only for metrics logged with ``timestamp=True``)."""
    monkeypatch.chdir(tmp_path)
    run_dir = canonical_journal(tmp_path / "runs")
    assert (
        main(
            ["replay", str(run_dir), "--to", "dvclive", "--new-run", "--logging-dir", str(tmp_path / "out"), "--quiet"]
        )
        == 0
    )
    (folder,) = (tmp_path / "out").glob("*/*/dvclive")
    rows = {
        key: [(step, float(cell)) for step, cell in points] for key, points in dvclive_files.tsv_rows(folder).items()
    }
    check_points(rows)
    assert dvclive_files.params(folder) == CANONICAL_CONFIG
