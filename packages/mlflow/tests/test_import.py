"""``tracking import mlflow``: runs written with MLflow's own client (file store and SQLite), imported,
replayed, read back with ``MlflowClient``. The two halves of the round-trip matrix for MLflow (see
``tracking_core.testing.transfer``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from tracking_core.cli import main
from tracking_core.store.journal import JournalSummary, read_journal
from tracking_core.testing.sdk_runs import write_mlflow
from tracking_core.testing.transfer import (
    CANONICAL_CONFIG,
    CANONICAL_POINTS,
    canonical_journal,
    check_imported,
    check_points,
)
from tracking_core.transfer.importing import import_runs
from tracking_core.transfer.model import SourceError


def _write_sdk_runs(uri: str, tmp: Path) -> list[str]:
    """Two runs in one experiment, written with MlflowClient directly (not through this library)."""
    return write_mlflow(uri, tmp).info["run_ids"]


@pytest.fixture(autouse=True)
def _file_store_allowed(monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 refuses to write a file store otherwise


def _digest(root: Path) -> dict[str, str]:
    files = [root] if root.is_file() else sorted(path for path in root.rglob("*") if path.is_file())
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


@pytest.mark.parametrize("store", ["file", "sqlite"])
def test_an_sdk_written_experiment_imports_every_run_with_history_params_tags_artifacts(tmp_path, store, capsys):
    if store == "file":
        source = tmp_path / "mlruns"
        uri = source.as_uri()
    else:
        source = tmp_path / "store.db"
        uri = f"sqlite:///{source}"
    ids = _write_sdk_runs(uri, tmp_path)
    (tmp_path / "elsewhere").mkdir()
    before = _digest(source)
    assert main(["import", "mlflow", str(source), "--logging-dir", str(tmp_path / "runs"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert _digest(source) == before, "the store was written to"
    assert "imported 2 run(s)" in out
    runs = sorted(path.parent for path in (tmp_path / "runs").glob("*/*/run.json"))
    assert len(runs) == 2 and {run.parent.name for run in runs} == {"sdk-exp"}
    for run_dir in runs:
        check_imported(run_dir)  # params "0.001", "32", "adam" come back as 0.001, 32, "adam"
        origin = json.loads((run_dir / "run.json").read_text())["imported_from"]
        assert origin["source_id"] in ids and origin["tags"]["team"] == "vision"
        (artifact,) = [r for r in read_journal(run_dir) if r["type"] == "artifact"]
        assert Path(artifact["local_path"]).read_text() == "trained on CPU"
        assert artifact["artifact_path"] == "docs"

    # one run by id, again: still two runs (idempotent), the one rewritten in place
    assert (
        main(["import", "mlflow", uri, "--option", f"run={ids[0]}", "--logging-dir", str(tmp_path / "runs"), "--quiet"])
        == 0
    )
    assert "re-imported in place" in capsys.readouterr().out
    assert len(list((tmp_path / "runs").glob("*/*/run.json"))) == 2


def test_the_import_prints_no_progress_bar_of_mlflows_artifact_download(tmp_path, capfd):
    pytest.importorskip("tqdm")  # MLflow draws its download bar with tqdm when it is installed (the test extra has it)
    source = tmp_path / "store.db"
    _write_sdk_runs(f"sqlite:///{source}", tmp_path)
    assert main(["import", "mlflow", str(source), "--logging-dir", str(tmp_path / "runs")]) == 0
    printed = capfd.readouterr()
    assert "imported 2 run(s)" in printed.out
    for shown in (printed.out, printed.err):
        assert "Downloading artifacts" not in shown and "%|" not in shown and "it/s]" not in shown
        assert not set(shown) & set("\u2588\u258f\u258e\u258d\u258c\u258b\u258a\u2589"), shown  # tqdm's bar blocks
    assert sorted(path.name for path in (tmp_path / "runs").glob("*/*/artifacts/*"))  # the artifacts still came


def test_a_run_folder_or_experiment_folder_names_what_to_import(tmp_path):
    ids = _write_sdk_runs((tmp_path / "mlruns").as_uri(), tmp_path)
    (run_folder,) = (tmp_path / "mlruns").glob(f"*/{ids[1]}")
    (one,) = import_runs("mlflow", str(run_folder), logging_dir=tmp_path / "a", progress=False).runs
    assert one.source_id == ids[1]
    both = import_runs("mlflow", str(run_folder.parent), logging_dir=tmp_path / "b", progress=False).runs
    assert sorted(run.source_id for run in both) == sorted(ids)


def test_runs_are_read_page_by_page(tmp_path, monkeypatch):
    import tracking_mlflow.importer as importer

    ids = _write_sdk_runs(f"sqlite:///{tmp_path / 's.db'}", tmp_path)
    monkeypatch.setattr(importer, "PAGE_SIZE", 1)
    runs = import_runs("mlflow", str(tmp_path / "s.db"), logging_dir=tmp_path / "runs", progress=False).runs
    assert sorted(run.source_id for run in runs) == sorted(ids)


def test_transient_failures_are_retried_a_bounded_number_of_times(monkeypatch):
    import tracking_mlflow.importer as importer

    monkeypatch.setattr(importer.time, "sleep", lambda seconds: None)
    calls = []

    def flaky(fail: int):
        calls.append(1)
        if len(calls) <= fail:
            raise ConnectionError("connection reset")
        return "answer"

    assert importer._retrying(flaky, 2) == "answer" and len(calls) == 3
    calls.clear()
    with pytest.raises(ConnectionError):
        importer._retrying(flaky, 99)
    assert len(calls) == importer.ATTEMPTS


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path, capsys):
    damaged = tmp_path / "mlflow.db"
    damaged.write_bytes(b"this is not sqlite at all" * 10)
    assert main(["import", "mlflow", str(damaged), "--logging-dir", str(tmp_path / "runs"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert str(damaged) in err and "not a SQLite database" in err
    truncated = tmp_path / "cut.db"
    _write_sdk_runs(f"sqlite:///{tmp_path / 'full.db'}", tmp_path)
    truncated.write_bytes((tmp_path / "full.db").read_bytes()[:8192])
    with pytest.raises(SourceError) as error:
        list(__import__("tracking_mlflow.importer", fromlist=["x"]).read_runs(str(truncated)))
    assert str(truncated) in str(error.value)


def test_an_imported_run_replays_into_jsonl_and_mlflow_with_every_point_once(tmp_path):
    from mlflow import MlflowClient

    _write_sdk_runs((tmp_path / "mlruns").as_uri(), tmp_path)
    imported = import_runs("mlflow", str(tmp_path / "mlruns"), logging_dir=tmp_path / "runs", progress=False).runs[0]
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
                "mlflow",
                "--new-run",
                "--logging-dir",
                str(tmp_path / "m"),
                "--quiet",
            ]
        )
        == 0
    )
    _check_mlflow_store(MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'm' / 'mlflow.db'}"))


def _check_mlflow_store(client) -> None:
    (run,) = client.search_runs([e.experiment_id for e in client.search_experiments()])
    histories = {key: client.get_metric_history(run.info.run_id, key) for key in CANONICAL_POINTS}
    check_points(
        {key: [(m.step, m.value) for m in history] for key, history in histories.items()},
        times={key: {m.step: m.timestamp / 1000 for m in history} for key, history in histories.items()},
    )
    assert {key: run.data.params[key] for key in CANONICAL_CONFIG} == {k: str(v) for k, v in CANONICAL_CONFIG.items()}


def test_the_canonical_journal_replays_into_mlflow(tmp_path):
    """Replay half of the matrix: journal -> MLflow, read back with MlflowClient."""
    from mlflow import MlflowClient

    run_dir = canonical_journal(tmp_path / "runs")
    assert (
        main(["replay", str(run_dir), "--to", "mlflow", "--new-run", "--logging-dir", str(tmp_path / "out"), "--quiet"])
        == 0
    )
    _check_mlflow_store(MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}"))
    assert JournalSummary(run_dir).config == CANONICAL_CONFIG


@pytest.mark.mlflow_server
def test_runs_on_a_tracking_server_import_page_by_page(tmp_path, monkeypatch, mlflow_server):
    import tracking_mlflow.importer as importer

    with importer._global_tracking_uri(mlflow_server.url):  # MLflow 2.x logs server artifacts by the global URI
        ids = _write_sdk_runs(mlflow_server.url, tmp_path)
    monkeypatch.setattr(importer, "PAGE_SIZE", 1)  # one run per page: the paging is exercised
    report = import_runs(
        "mlflow", mlflow_server.url, logging_dir=tmp_path / "runs", options={"experiment": "sdk-exp"}, progress=False
    )
    assert report.ok and sorted(run.source_id for run in report.runs) == sorted(ids)
    for run in report.runs:
        check_imported(run.run_dir)
        (artifact,) = [r for r in read_journal(run.run_dir) if r["type"] == "artifact"]
        assert Path(artifact["local_path"]).read_text() == "trained on CPU"
