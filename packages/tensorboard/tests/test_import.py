"""``tracking import tensorboard``: event files written with tensorboard's SDK directly (as torch's
``SummaryWriter`` and ``tf.summary``/Keras write them), imported, replayed, read back.

The two halves of the round-trip matrix for TensorBoard (see ``tracking_core.testing.transfer``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from tracking_core.cli import main
from tracking_core.kit import SourceError
from tracking_core.store.journal import JournalSummary, read_journal
from tracking_core.testing.sdk_runs import write_tensorboard
from tracking_core.testing.transfer import (
    CANONICAL_CONFIG,
    CANONICAL_POINTS,
    canonical_journal,
    canonical_time,
    check_imported,
    check_points,
)
from tracking_core.transfer.importing import import_runs


def _digest(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_an_sdk_written_run_imports_with_steps_times_media_and_hparams(tmp_path, capsys):
    source = tmp_path / "tb" / "exp1"
    write_tensorboard(source)
    before = _digest(tmp_path / "tb")
    assert (
        main(["import", "tensorboard", str(tmp_path / "tb"), "--logging-dir", str(tmp_path / "runs"), "--quiet"]) == 0
    )
    out = capsys.readouterr().out
    assert _digest(tmp_path / "tb") == before  # the source is only read
    (run_dir,) = [path.parent for path in (tmp_path / "runs").glob("*/*/run.json")]
    check_imported(run_dir, float32=True)
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["imported_from"]["backend"] == "tensorboard" and manifest["imported_from"]["location"] == str(
        source
    )
    records = list(read_journal(run_dir))
    (images,) = [r for r in records if r["type"] == "images"]
    assert images["step"] == 3 and (run_dir / images["images"]["samples"][0]).read_bytes().startswith(b"\x89PNG")
    tables = {r["name"]: r for r in records if r["type"] == "table"}
    assert tables["notes"]["data"] == [["hello **world**"]]
    (histogram,) = [r for r in records if r["type"] == "histogram"]
    assert histogram["histogram"]["counts"] == [1, 2, 1] and histogram["histogram"]["edges"] == [0.5, 1.0, 2.0, 2.5]
    assert "not carried: 1 audio (speech)" in out  # listed, not dropped silently

    # again: the same run, rewritten in place
    assert (
        main(["import", "tensorboard", str(tmp_path / "tb"), "--logging-dir", str(tmp_path / "runs"), "--quiet"]) == 0
    )
    assert len(list((tmp_path / "runs").glob("*/*/run.json"))) == 1


@pytest.mark.parametrize("given", ["run folder", "event file", "project folder"])
def test_the_project_is_the_folder_above_the_run(tmp_path, given):
    """``tensorboard --logdir runs/proj`` shows the runs of ``proj``: a run named by its own folder (or one of
    its event files) belongs to the project above it, not to a project named after the run."""
    source = tmp_path / "runs" / "proj" / "run1"
    write_tensorboard(source)
    path = {"run folder": source, "event file": next(source.glob("events*")), "project folder": source.parent}[given]
    report = import_runs("tensorboard", str(path), logging_dir=tmp_path / "imported", progress=False)
    (imported,) = report.runs
    assert imported.run_dir.parent == tmp_path / "imported" / "proj"
    assert json.loads((imported.run_dir / "run.json").read_text())["project"] == "proj"


def test_a_run_this_library_wrote_keeps_its_exact_config(tmp_path):
    import tracking_core

    config = {"lr": 0.1, "model": {"layers": [64, 64]}}
    run = tracking_core.init("p", log_with="tensorboard", logging_dir=tmp_path / "logs", config=config)
    for step in range(5):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    run.log_images({"sample": np.full((3, 4, 3), 7, dtype=np.uint8)}, step=2)  # the image plugin's tensor form
    run.finish()
    report = import_runs("tensorboard", str(tmp_path / "logs"), logging_dir=tmp_path / "runs", progress=False)
    (imported,) = report.runs
    summary = JournalSummary(imported.run_dir)
    assert summary.config == config
    assert [step for step, _ in summary.metrics["loss"]] == list(range(5))
    (images,) = [r for r in read_journal(imported.run_dir) if r["type"] == "images"]
    assert images["step"] == 2 and list(images["images"]) == ["sample"]


def test_a_truncated_event_file_is_a_clear_error_naming_it(tmp_path, capsys):
    write_tensorboard(tmp_path / "tb" / "a")
    write_tensorboard(tmp_path / "tb" / "b")
    (damaged,) = (tmp_path / "tb" / "b").glob("events*")
    damaged.write_bytes(damaged.read_bytes()[:-7])
    with pytest.raises(SourceError, match="truncated") as error:
        list(
            __import__("tracking_core.transfer.importing", fromlist=["x"]).importer_for("tensorboard")(
                str(tmp_path / "tb" / "b")
            )
        )
    assert error.value.path == str(damaged)
    assert (
        main(["import", "tensorboard", str(tmp_path / "tb"), "--logging-dir", str(tmp_path / "runs"), "--quiet"]) == 1
    )
    err = capsys.readouterr().err
    assert str(damaged) in err and "imported up to there" in err and "1 run(s) were imported before it" in err
    assert len(list((tmp_path / "runs").glob("*/*/run.json"))) == 1


def test_an_imported_run_replays_into_jsonl_and_tensorboard_with_every_point_once(tmp_path, event_reader):
    write_tensorboard(tmp_path / "tb" / "exp1")
    (imported,) = import_runs("tensorboard", str(tmp_path / "tb"), logging_dir=tmp_path / "runs", progress=False).runs
    code = main(
        ["replay", str(imported.run_dir), "--to", "jsonl", "--new-run", "--logging-dir", str(tmp_path / "j"), "--quiet"]
    )
    assert code == 0
    (copy,) = [path.parent for path in (tmp_path / "j").glob("*/*/journal.jsonl")]
    check_imported(copy, float32=True)  # what the copy holds is what the import held
    assert main(["replay", str(imported.run_dir), "--to", "tensorboard", "--quiet"]) == 0  # into the imported run
    # the source imported again, then replayed again: nothing is sent twice
    import_runs("tensorboard", str(tmp_path / "tb"), logging_dir=tmp_path / "runs", progress=False)
    assert main(["replay", str(imported.run_dir), "--to", "tensorboard", "--quiet"]) == 0
    (folder,) = {path.parent for path in (tmp_path / "runs").rglob("events.out.tfevents.*")}
    reader = event_reader(folder)
    points = {
        tag: [(e.step, float(e.tensor_proto.float_val[0])) for e in reader.accumulator.Tensors(tag)]
        for tag in CANONICAL_POINTS
    }
    check_points(points, float32=True)  # lists: a step stored twice would fail


def test_the_canonical_journal_replays_into_tensorboard(tmp_path, event_reader):
    """Replay half of the matrix: journal -> TensorBoard, read back with its accumulator."""
    run_dir = canonical_journal(tmp_path / "runs")
    assert (
        main(
            [
                "replay",
                str(run_dir),
                "--to",
                "tensorboard",
                "--new-run",
                "--logging-dir",
                str(tmp_path / "out"),
                "--quiet",
            ]
        )
        == 0
    )
    (folder,) = {path.parent for path in (tmp_path / "out").rglob("events.out.tfevents.*")}
    reader = event_reader(folder)
    check_points(reader.scalars(), float32=True)
    times = {
        tag: {event.step: event.wall_time for event in reader.accumulator.Tensors(tag)} for tag in CANONICAL_POINTS
    }
    check_points(reader.scalars(), float32=True, times=times)
    assert reader.config_json() == CANONICAL_CONFIG


def test_hparams_as_torch_writes_them_without_a_tensor_become_the_config(tmp_path):
    """torch.utils.tensorboard's ``hparams()`` (and so Lightning's TensorBoardLogger) writes the session start
    as a value holding only its metadata, no tensor."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    start = plugin_data_pb2.SessionStartInfo()
    start.hparams["lr"].number_value = 0.01
    start.hparams["optimizer"].string_value = "adam"
    content = plugin_data_pb2.HParamsPluginData(session_start_info=start, version=0).SerializeToString()
    meta = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="hparams", content=content)
    )
    writer = EventFileWriter(str(tmp_path / "lightning_logs" / "version_0"))
    hparams = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="_hparams_/session_start_info", metadata=meta)])
    writer.add_event(event_pb2.Event(wall_time=canonical_time(0), summary=hparams))
    loss = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="train/loss", simple_value=0.5)])
    writer.add_event(event_pb2.Event(wall_time=canonical_time(1), step=1, summary=loss))
    writer.close()
    runs = tmp_path / "runs"
    assert main(["import", "tensorboard", str(tmp_path / "lightning_logs"), "--logging-dir", str(runs), "--quiet"]) == 0
    (run_dir,) = [path.parent for path in runs.glob("*/*/run.json")]
    (config,) = [record["values"] for record in read_journal(run_dir) if record["type"] == "config"]
    assert config == {"lr": 0.01, "optimizer": "adam"}
    assert not json.loads((run_dir / "run.json").read_text())["imported_from"]["not_carried"]
