"""Importing runs into journals, exporting them and comparing them (core only: a fake importer).

The backend importers have their own tests in their cells; here the writer, the command and the
outputs are checked against a source run whose content is known exactly.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from tracking_core import GeneralTracker, register_tracker_class
from tracking_core.cli import main
from tracking_core.kit import encode_png
from tracking_core.store.journal import JournalSummary, read_journal
from tracking_core.testing import MemoryTracker
from tracking_core.transfer.importing import import_runs, register_importer
from tracking_core.transfer.model import Media, Point, SourceError, SourceRun

T0 = 1_764_500_000.0


def _points(offset: float = 0.0) -> list[Point]:
    # per key, as most stores hand them out (not step order across keys); times to the microsecond
    points = [Point("loss", step, 1.0 / (step + 1) + offset, T0 + step + 0.123456) for step in range(0, 20, 2)]
    points += [Point("acc", step, 0.5 + step / 40 + offset, T0 + step + 0.5) for step in range(0, 20, 2)]
    points += [Point("note", 4, "warmup over", T0 + 4.5)]
    return points


def _source_runs(tmp: Path, *, fail_second: bool = False, lr: float = 0.1):
    artifact = tmp / "model.txt"
    artifact.write_text("weights", encoding="utf-8")
    image = encode_png(np.full((4, 5, 3), 200, dtype=np.uint8))

    def read_runs(source: str, *, options=None):
        yield SourceRun(
            backend="fake",
            source_id=f"{source}#1",
            name="first run",
            project="proj",
            started=T0,
            ended=T0 + 30,
            status="FINISHED",
            config={"lr": lr, "model": {"layers": 2}},
            tags={"team": "a"},
            points=_points(),
            media=[
                Media("image", "samples", 2, image),
                Media("image", "samples_", 2, image),  # the same file-safe name as "samples/": its own file
                Media("image", "photo", 2, b"\xff\xd8\xff\xe0 not decoded"),
                Media("table", "preds", 4, {"columns": ["x", "y"], "data": [[1, 2], [3, 4]]}),
                Media("text", "prompt", 6, "hello"),
                Media("histogram", "weights", 8, {"counts": [1, 2, 1], "edges": [0.0, 1.0, 2.0, 3.0]}),
                Media("artifact", "model/model.txt", None, str(artifact)),
                Media("audio", "speech", 1, b"..."),
            ],
            not_carried=["a system metric series the journal has no place for"],
            location=str(tmp / "source"),
        )

        def second_points():
            yield Point("loss", 0, 0.9, T0)
            if fail_second:
                raise SourceError(str(tmp / "source" / "run2.bin"), "truncated record", imported="loss up to step 0")
            yield Point("loss", 1, 0.8, T0 + 1)

        yield SourceRun(backend="fake", source_id=f"{source}#2", name="second", project="proj", points=second_points())

    return read_runs


@pytest.fixture
def fake(tmp_path):
    register_importer("fake", _source_runs(tmp_path))
    return tmp_path


def _run_dirs(root: Path) -> list[Path]:
    return sorted(path.parent for path in root.glob("*/*/run.json"))


def test_import_writes_a_journal_with_original_steps_times_config_and_provenance(fake):
    report = import_runs("fake", "src", logging_dir=fake / "runs", progress=False)
    assert report.ok and len(report.runs) == 2
    first = report.runs[0].run_dir
    summary = JournalSummary(first)
    assert summary.config == {"lr": 0.1, "model": {"layers": 2}}
    assert summary.metrics["loss"] == [(step, 1.0 / (step + 1)) for step in range(0, 20, 2)]
    assert summary.metrics["note"] == [(4, "warmup over")]
    records = [r for r in read_journal(first) if r["type"] == "metrics"]
    assert [r["step"] for r in records] == sorted(r["step"] for r in records)  # step order, for W&B
    times = {(r["step"], key): r["time"] for r in records for key in r["values"]}
    assert times[(6, "loss")] == pytest.approx(T0 + 6.123456, abs=1e-6)
    assert times[(6, "acc")] == T0 + 6.5
    assert summary.finished
    seqs = [r["seq"] for r in read_journal(first) if "seq" in r]
    assert seqs == list(range(1, len(seqs) + 1))  # numbered: replay delivers each record once

    manifest = json.loads((first / "run.json").read_text())
    origin = manifest["imported_from"]
    assert (origin["backend"], origin["source_id"], origin["location"]) == ("fake", "src#1", str(fake / "source"))
    assert isinstance(origin["imported_at"], float) and origin["tags"] == {"team": "a"}
    assert manifest["started"] == T0 and manifest["last_step"] == 18 and manifest["status"] == "finished"
    assert first.parent.name == "proj"


def test_import_copies_media_and_lists_what_it_could_not_carry(fake):
    report = import_runs("fake", "src", logging_dir=fake / "runs", progress=False)
    run = report.runs[0]
    records = list(read_journal(run.run_dir))
    images = [r for r in records if r["type"] == "images"]
    assert len(images) == 2 and (run.run_dir / images[0]["images"]["samples"][0]).read_bytes().startswith(b"\x89PNG")
    assert len({path for record in images for paths in record["images"].values() for path in paths}) == 2
    tables = {r["name"]: r for r in records if r["type"] == "table"}
    assert tables["preds"]["data"] == [[1, 2], [3, 4]] and tables["prompt"]["data"] == [["hello"]]
    (histogram,) = [r for r in records if r["type"] == "histogram"]
    assert histogram["histogram"]["counts"] == [1, 2, 1] and histogram["step"] == 8
    (artifact,) = [r for r in records if r["type"] == "artifact"]
    assert Path(artifact["local_path"]).read_text() == "weights"
    assert Path(artifact["local_path"]).is_relative_to(run.run_dir.resolve())
    assert run.media == {"image": 2, "table": 1, "text": 1, "histogram": 1, "artifact": 1}
    text = "\n".join(run.not_carried)
    assert "JPEG" in text and "audio 'speech'" in text and "system metric" in text
    assert "not carried: image 'photo'" in str(report)
    manifest = json.loads((run.run_dir / "run.json").read_text())
    assert manifest["imported_from"]["not_carried"] == run.not_carried


def test_images_a_source_keeps_as_a_list_at_one_step_stay_one_list(tmp_path, memory):
    """W&B, Aim and SwanLab keep a list of images under one key at one step. Replayed as separate records,
    a target that keeps one value per key and step (W&B merges a step's values into one row) kept the last."""
    first, second = (encode_png(np.full((2, 3, 3), value, dtype=np.uint8)) for value in (10, 250))

    def read_runs(source: str, *, options=None):
        media = [Media("image", "pair", 3, first), Media("image", "pair", 3, second), Media("image", "one", 3, first)]
        yield SourceRun(
            backend="fake", source_id="lists", project="proj", points=[Point("loss", 3, 0.5, T0)], media=media
        )

    register_importer("fake", read_runs)
    (run,) = import_runs("fake", "src", logging_dir=tmp_path / "runs", progress=False).runs
    records = [r for r in read_journal(run.run_dir) if r["type"] == "images"]
    assert [(r["step"], {key: len(files) for key, files in r["images"].items()}) for r in records] == [
        (3, {"pair": 2}),
        (3, {"one": 1}),
    ]
    assert main(["replay", str(run.run_dir), "--to", "memory", "--new-run", "--quiet"]) == 0
    delivered = [
        (step, {key: [int(np.asarray(image)[0, 0, 0]) for image in items] for key, items in values.items()})
        for step, values in memory.runs[-1].images
    ]
    assert delivered == [(3, {"pair": [10, 250]}), (3, {"one": [10]})]


def test_importing_the_same_runs_twice_keeps_one_run_each(fake):
    import_runs("fake", "src", logging_dir=fake / "runs", progress=False)
    register_importer("fake", _source_runs(fake, lr=0.2))  # the source changed since
    again = import_runs("fake", "src", logging_dir=fake / "runs", progress=False)
    assert len(_run_dirs(fake / "runs")) == 2
    assert all(run.replaced for run in again.runs)
    assert JournalSummary(again.runs[0].run_dir).config["lr"] == 0.2
    assert len(JournalSummary(again.runs[0].run_dir).metrics["loss"]) == 10
    assert not list((fake / "runs").glob("*/.*"))  # no building or replaced folder left behind


def test_a_damaged_source_names_the_file_and_keeps_the_runs_before_it(fake, capsys):
    register_importer("fake", _source_runs(fake, fail_second=True))
    code = main(["import", "fake", "src", "--logging-dir", str(fake / "runs"), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 1
    assert str(fake / "source" / "run2.bin") in err and "truncated record" in err
    assert "imported up to there: loss up to step 0" in err and "1 run(s) were imported before it" in err
    assert len(_run_dirs(fake / "runs")) == 1 and "first_run" in out
    assert not list((fake / "runs").glob("*/.*"))


def test_import_command_reports_and_an_unknown_backend_is_a_clear_error(fake, capsys):
    assert main(["import", "fake", "src", "--logging-dir", str(fake / "runs"), "--project", "moved"]) == 0
    out = capsys.readouterr().out
    assert "imported 2 run(s), 23 points" in out and "tracking replay" in out
    assert {path.parent.name for path in _run_dirs(fake / "runs")} == {"moved"}
    assert main(["import", "nosuch", "x"]) == 2
    assert "no importer for 'nosuch'" in capsys.readouterr().err
    assert main(["import", "fake", "src", "--option", "novalue"]) == 2


def test_an_imported_run_replays_into_a_new_run_with_every_point_once(fake, capsys):
    report = import_runs("fake", "src", logging_dir=fake / "runs", progress=False)
    source = report.runs[0].run_dir
    code = main(["replay", str(source), "--to", "jsonl", "--new-run", "--logging-dir", str(fake / "out"), "--quiet"])
    assert code == 0, capsys.readouterr()
    (copy,) = _run_dirs(fake / "out")
    original, replayed = JournalSummary(source), JournalSummary(copy)
    assert replayed.metrics == original.metrics and replayed.config == original.config
    times = sorted(r["time"] for r in read_journal(copy) if r["type"] == "metrics")
    assert times == sorted(r["time"] for r in read_journal(source) if r["type"] == "metrics")


class _MetricsOnly(MemoryTracker):
    """A backend with metrics and config but no images, tables or artifacts (DVCLive has no tables)."""

    name = "metricsonly"
    log_images = GeneralTracker.log_images
    log_table = GeneralTracker.log_table
    log_artifact = GeneralTracker.log_artifact


def test_replaying_into_the_run_skips_what_the_backend_has_no_method_for_and_says_so(fake, capsys):
    """A live run never queues a table for a backend without ``log_table``; a journal replayed into the
    run (or caught up from on resume) holds every kind, so the catch-up skips those the same way."""
    register_tracker_class(_MetricsOnly)
    run_dir = import_runs("fake", "src", logging_dir=fake / "runs", progress=False).runs[0].run_dir
    code = main(["replay", str(run_dir), "--to", "metricsonly", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "metricsonly  finished" in out and "spilled" not in out.split("metricsonly", 2)[-1]
    assert "metricsonly: 2 tables skipped: metricsonly has no log_table" in out  # the table and the text
    assert "metricsonly: 2 images skipped: metricsonly has no log_images" in out
    assert "metricsonly: 1 artifacts skipped: metricsonly has no log_artifact" in out
    assert MemoryTracker.runs[-1].series("loss") == {step: 1.0 / (step + 1) for step in range(0, 20, 2)}
    assert not (run_dir / "spill-metricsonly.jsonl").exists()
    assert main(["replay", str(run_dir), "--to", "metricsonly", "--quiet"]) == 0  # nothing is owed
    assert MemoryTracker.runs[-1].metrics == []


# -- export ------------------------------------------------------------------------------------------


def test_export_csv_and_json_one_row_per_step_and_key_with_config(fake, capsys):
    report = import_runs("fake", "src", logging_dir=fake / "runs", progress=False)
    run = report.runs[0].run_dir
    assert main(["export", str(run), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 21
    loss = [row for row in rows if row["key"] == "loss"]
    assert [int(row["step"]) for row in loss] == list(range(0, 20, 2))
    assert float(loss[3]["value"]) == 1.0 / 7 and float(loss[3]["time"]) == pytest.approx(T0 + 6.123456)
    assert {row["config.lr"] for row in rows} == {"0.1"} and {row["config.model.layers"] for row in rows} == {"2"}
    assert {row["project"] for row in rows} == {"proj"}

    out = fake / "run.json.export"
    assert (
        main(["export", f"proj/{run.name}", "--format", "json", "-o", str(out), "--logging-dir", str(fake / "runs")])
        == 0
    )
    document = json.loads(out.read_text())
    assert document["config"] == {"lr": 0.1, "model": {"layers": 2}} and len(document["rows"]) == 21
    assert document["imported_from"]["backend"] == "fake"
    assert {"step": 4, "time": T0 + 4.5, "key": "note", "value": "warmup over"} in document["rows"]


def test_export_parquet(fake, capsys):
    report = import_runs("fake", "src", logging_dir=fake / "runs", progress=False)
    target = fake / "out.parquet"
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert main(["export", str(report.runs[0].run_dir), "--format", "parquet", "-o", str(target)]) == 2
        assert "needs pyarrow" in capsys.readouterr().err and not target.exists()
        pytest.skip("pyarrow is not installed: the clear message was checked instead")
    assert main(["export", str(report.runs[0].run_dir), "--format", "parquet", "-o", str(target)]) == 0
    table = pq.read_table(target).to_pylist()
    assert len(table) == 21 and {row["config.lr"] for row in table} == {0.1}


# -- resolve and compare ---------------------------------------------------------------------------


def _two_runs(tmp: Path) -> list[Path]:
    register_importer("fake", _source_runs(tmp))
    first = import_runs("fake", "a", logging_dir=tmp / "runs", progress=False).runs[0].run_dir
    register_importer("fake", _source_runs(tmp, lr=0.3))
    second = import_runs("fake", "b", logging_dir=tmp / "runs", progress=False).runs[0].run_dir
    return [first, second]


def test_runs_are_named_by_folder_run_id_or_project_slash_run(tmp_path):
    from tracking_core.transfer.resolve import resolve_run

    first, second = _two_runs(tmp_path)
    root = tmp_path / "runs"
    assert resolve_run(first, root) == first / "journal.jsonl"
    assert resolve_run(first.name, root) == first / "journal.jsonl"
    assert resolve_run(f"proj/{second.name}", root) == second / "journal.jsonl"
    with pytest.raises(ValueError, match="ambiguous"):
        resolve_run("first_run", root)  # the start of both ids
    with pytest.raises(FileNotFoundError, match="no run 'nope'"):
        resolve_run("nope", root)


def test_compare_json_gives_last_best_min_and_the_config_difference(tmp_path, capsys):
    first, second = _two_runs(tmp_path)
    assert main(["compare", str(first), str(second), "--keys", "loss", "acc", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    loss = result["series"]["loss"][f"proj/{first.name}"]
    assert loss["goal"] == "min" and loss["last"] == 1.0 / 19 and loss["best"] == 1.0 / 19
    assert loss["min"] == 1.0 / 19 and loss["last_step"] == 18 and loss["points"] == 10
    acc = result["series"]["acc"][f"proj/{second.name}"]
    assert acc["goal"] == "max" and acc["best"] == 0.5 + 18 / 40 and acc["min"] == 0.5
    assert result["config_diff"] == {"lr": {f"proj/{first.name}": 0.1, f"proj/{second.name}": 0.3}}
    assert "note" not in result["series"]  # text series are not compared

    assert main(["compare", str(first), str(second)]) == 0
    text = capsys.readouterr().out
    assert "loss" in text and "lr" in text and "0.3" in text
    assert main(["compare", str(first), "--keys", "nothing*"]) == 2


def test_compare_html_is_one_self_contained_page(tmp_path, capsys):
    first, second = _two_runs(tmp_path)
    page = tmp_path / "cmp.html"
    assert main(["compare", str(first), str(second), "--html", str(page)]) == 0
    html = page.read_text()
    assert html.count("<svg") == 2 and html.count("<polyline") == 4  # loss and acc, a line per run
    assert "<script" not in html and "src=" not in html and "href=" not in html and "@import" not in html
    assert "lr" in html and "0.3" in html


def test_compare_tells_apart_config_values_that_differ_below_the_printed_precision(tmp_path, capsys):
    register_importer("fake", _source_runs(tmp_path))
    first = import_runs("fake", "a", logging_dir=tmp_path / "runs", progress=False).runs[0].run_dir
    register_importer("fake", _source_runs(tmp_path, lr=0.10000001))
    second = import_runs("fake", "b", logging_dir=tmp_path / "runs", progress=False).runs[0].run_dir

    assert main(["compare", str(first), str(second), "--json"]) == 0
    exact = json.loads(capsys.readouterr().out)["config_diff"]["lr"]
    assert exact == {f"proj/{first.name}": 0.1, f"proj/{second.name}": 0.10000001}

    assert main(["compare", str(first), str(second)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["lr"])
    assert row.split()[1:] == ["0.1", "0.10000001"]

    page = tmp_path / "cmp.html"
    assert main(["compare", str(first), str(second), "--html", str(page)]) == 0
    assert "<th>lr</th><td>0.1</td><td>0.10000001</td>" in page.read_text()


def test_compare_shortens_long_config_texts_only_while_they_still_read_apart():
    from tracking_core.transfer.compare import _config_cells

    stem = "x" * 45
    assert _config_cells([stem + "a", stem + "b"]) == [stem + "a", stem + "b"]
    assert _config_cells([stem + "a", "short"]) == ["x" * 37 + "...", "short"]
    assert _config_cells([1e-4, None, 2]) == ["0.0001", "-", "2"]


def test_a_long_import_shows_its_count_and_rate_on_stderr(capsys, monkeypatch):
    from tracking_core.transfer import importing

    monkeypatch.setattr(importing.sys.stderr, "isatty", lambda: False)
    progress = importing._Progress("import fake", enabled=True)
    progress.began -= 10  # as if it had been running for 10 s
    progress.last -= 10
    assert sum(1 for _ in progress.count(range(5000))) == 5000
    progress.tick(final=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines and lines[-1].startswith("import fake: 0 runs, 5,000 points (") and "points/s)" in lines[-1]
    quiet = importing._Progress("import fake", enabled=False)
    quiet.began -= 10
    quiet.tick(final=True)
    assert capsys.readouterr().err == ""


def test_replaying_after_a_re_import_sends_only_what_is_new(fake):
    from tracking_core.transfer.writer import imported_runs

    report = import_runs("fake", "src", logging_dir=fake / "runs", progress=False)
    run_dir = report.runs[0].run_dir
    manifest = json.loads((run_dir / "run.json").read_text())
    last = manifest["last_seq"]
    manifest.update(backends={"mlflow": {"run_id": "abc"}}, progress={"mlflow": {"seq": last, "step": 18}})
    (run_dir / "run.json").write_text(json.dumps(manifest))  # as a replay into MLflow leaves it
    (run_dir / "events.out.tfevents.1").write_bytes(b"a backend's own file")  # as a replay into TensorBoard

    import_runs("fake", "src", logging_dir=fake / "runs", progress=False)  # the same source again
    kept = json.loads((run_dir / "run.json").read_text())
    assert kept["backends"] == {"mlflow": {"run_id": "abc"}} and kept["progress"]["mlflow"]["seq"] == last
    assert kept["imported_from"]["source_id"] == "src#1"
    assert (run_dir / "events.out.tfevents.1").read_bytes() == b"a backend's own file"

    register_importer("fake", _source_runs(fake, lr=0.5))  # the source changed under the replayed records
    again = import_runs("fake", "src", logging_dir=fake / "runs", progress=False)
    dropped = json.loads((run_dir / "run.json").read_text())
    assert dropped["backends"] == {} and dropped["progress"] == {}
    assert any("replay state" in item for item in again.runs[0].not_carried)
    assert sorted(imported_runs(fake / "runs")) == [("fake", "src#1"), ("fake", "src#2")]


@pytest.mark.parametrize(("ended", "status"), [(None, "imported"), (1_000.0, "finished")])
def test_show_and_runs_give_an_imported_run_the_same_status(tmp_path, capsys, ended, status):
    """An imported run's process never ran here: neither command calls it killed or still running."""
    from tracking_core.testing.transfer import canonical_points
    from tracking_core.transfer.writer import write_run

    source = SourceRun(
        backend="canonical", source_id="s", name="s", project="proj", started=1.0, ended=ended,
        points=list(canonical_points()), location="here",
    )  # fmt: skip
    run_dir = write_run(source, tmp_path / "runs", project="proj").run_dir
    assert main(["runs", str(tmp_path / "runs")]) == 0
    (row,) = capsys.readouterr().out.splitlines()[2:]
    assert row.split()[5] == status, row  # project, run, date, time, steps, status
    assert main(["show", str(run_dir)]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    assert header.endswith(f"   {status}") and "not finished" not in header, header


def test_an_importer_not_installed_names_the_install_command_that_works_from_here():
    """From a clone, the backend's folder beside core's (the one ``init`` names too), not a name no index has."""
    from tracking_core.contract.registry import install_command
    from tracking_core.transfer.importing import importer_for

    with pytest.raises(ImportError) as caught:
        importer_for("wandb")  # the core cell installs no backend
    assert install_command("wandb") in str(caught.value)
