"""``tracking show``, ``compare`` and ``export`` show what the user logged; the system samples only with ``--system``.

The runs here are made as users make them (``init``/``log``/``finish``, the sampler off so their content
is known exactly), with the run folder's ``system.jsonl`` written in the sampler's format; an imported
run stands for a journal written before that file existed, whose ``system/*`` values sit among the
metrics at the user's step. Which way is "best" comes from the key's name, and only where it says.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import tracking_core
from tracking_core.cli import main
from tracking_core.transfer.compare import compare_runs, goal_of
from tracking_core.transfer.importing import import_runs, register_importer
from tracking_core.transfer.model import Point, SourceRun

USER_KEYS = ["lr", "train/loss", "valid/accuracy", "valid/loss"]
SAMPLE_EVERY = 10.0


def demo_run(root: Path, scale: float, samples: int = 4, steps: int = 30) -> Path:
    """A run shaped like ``tracking demo``'s, with ``samples`` samples in its ``system.jsonl``."""
    run = tracking_core.init(
        "demo", logging_dir=root, config={"optimizer": {"lr": 0.5 * scale}}, system_metrics=False, context=False
    )
    for step in range(steps):
        values = {"train": {"loss": scale / (step + 1)}, "lr": 0.5 * scale * (1 - step / steps)}
        if step % 10 == 0 or step == steps - 1:
            values.update({"valid/loss": scale / (step + 2), "valid/accuracy": 0.5 + step / (2 * steps)})
        run.log(values, step=step)
    run.finish()
    run_dir = Path(run.run_dir)
    started = json.loads((run_dir / "run.json").read_text())["started"]
    with (run_dir / "system.jsonl").open("w", encoding="utf-8") as handle:
        for index in range(samples):
            values = {"system/cpu.percent": 10.0 * scale + index, "system/memory.used_gb": 1.5 + 0.25 * index}
            line = {"index": index, "time": started + SAMPLE_EVERY * (index + 1), "values": values}
            handle.write(json.dumps(line) + "\n")
    return run_dir


def journaled_run(root: Path) -> Path:
    """A run whose journal holds ``system/*`` metric records: three samples, all at step 0 (a short run)."""

    def read_runs(source, *, options=None):
        points = [Point("train/loss", step, 1.0 / (step + 1), 1_764_500_000.0 + step) for step in range(5)]
        points += [Point("lr", step, 0.1, 1_764_500_000.0 + step) for step in range(5)]
        points += [Point("system/cpu.percent", 0, 20.0 + i, 1_764_500_000.0 + 10 * i) for i in range(3)]
        points += [Point("system/memory.used_gb", 0, 2.0, 1_764_500_000.0 + 10 * i) for i in range(3)]
        yield SourceRun("samples", "one", name="old", project="demo", config={"lr": 0.1}, points=points)

    register_importer("samples", read_runs)
    return import_runs("samples", "x", logging_dir=root, progress=False).runs[0].run_dir


# -- which way is best ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["loss", "train/loss", "eval_loss", "valid.loss", "valLoss", "val/nll", "error_rate", "test/wer", "cer",
     "mse", "val_rmse", "mae", "perplexity", "ppl", "eval_runtime", "time/epoch", "latency_ms"],
)  # fmt: skip
def test_a_loss_an_error_or_a_time_is_best_at_its_minimum(key):
    assert goal_of(key) == "min"


@pytest.mark.parametrize(
    "key",
    ["acc", "valid/accuracy", "top1_acc", "acc@5", "f1", "eval/f1_score", "precision", "recall", "val_auc",
     "bleu", "rougeL", "mAP50", "map", "miou", "val/iou", "dice", "reward", "episode/return", "score"],
)  # fmt: skip
def test_an_accuracy_a_score_or_a_reward_is_best_at_its_maximum(key):
    assert goal_of(key) == "max"


@pytest.mark.parametrize(
    "key",
    ["lr", "learning_rate", "grad_norm", "epoch", "lossless_ratio", "errand", "accumulate", "timestamp",
     "samples_per_second", "loss_scale", "reward_std", "system/memory.used_gb", "system/cpu.percent"],
)  # fmt: skip
def test_a_name_that_says_no_direction_has_no_best(key):
    assert goal_of(key) is None


# -- compare ---------------------------------------------------------------------------------------


def test_compare_json_holds_the_users_series_and_best_only_where_the_name_says(tmp_path, capsys):
    first, second = demo_run(tmp_path, 1.0), demo_run(tmp_path, 2.0, samples=2)
    assert main(["compare", str(first), str(second), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert sorted(result["series"]) == USER_KEYS and "system" not in result
    assert [run["system_samples"] for run in result["runs"]] == [4, 2]
    label = result["runs"][0]["label"]
    lr = result["series"]["lr"][label]
    assert lr["goal"] is None and lr["best"] is None and lr["best_step"] is None
    assert lr["min"] == pytest.approx(0.5 / 30) and lr["max"] == 0.5 and lr["last"] == pytest.approx(0.5 / 30)
    loss = result["series"]["train/loss"][label]
    assert loss["goal"] == "min" and loss["best"] == 1.0 / 30 and loss["best_step"] == 29
    accuracy = result["series"]["valid/accuracy"][label]
    assert accuracy["goal"] == "max" and accuracy["best"] == 0.5 + 29 / 60 and accuracy["best_step"] == 29

    assert main(["compare", str(first), str(second), "--json", "--system"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert sorted(result["series"]) == USER_KEYS  # the samples stay out of the user's series
    assert sorted(result["system"]) == ["system/cpu.percent", "system/memory.used_gb"]
    cpu = result["system"]["system/cpu.percent"]
    assert cpu[label]["samples"] == 4 and cpu[label]["min"] == 10.0 and cpu[label]["max"] == 13.0
    assert cpu[label]["mean"] == 11.5 and "best" not in cpu[label] and "goal" not in cpu[label]
    assert cpu[result["runs"][1]["label"]]["samples"] == 2


def test_compare_text_leaves_the_samples_out_and_says_best_only_for_a_known_direction(tmp_path, capsys):
    first, second = demo_run(tmp_path, 1.0), demo_run(tmp_path, 2.0)
    assert main(["compare", str(first), str(second)]) == 0
    text = capsys.readouterr().out
    assert "system/" not in text and "system samples not shown (4 per run)" in text
    rows = {line.split()[0] + " " + line.split()[1]: line.split() for line in text.splitlines() if "demo/" in line}
    lr = rows[f"lr demo/{first.name}"]
    assert lr[4:7] == ["-", "-", f"{0.5 / 30:.6g}"]  # best and best step are blank, min is there
    assert rows[f"train/loss demo/{first.name}"][4:6] == [f"{1 / 30:.6g}", "(min)"]
    assert rows[f"valid/accuracy demo/{first.name}"][5] == "(max)"

    assert main(["compare", str(first), str(second), "--system", "--keys", "valid/*", "system/cpu*"]) == 0
    text = capsys.readouterr().out
    series, samples = text.split("system sample ")[0], text.split("system sample ")[1]
    assert "valid/loss" in series and "train/loss" not in series and "system/" not in series
    assert "system/cpu.percent" in samples and "system/memory" not in samples and "(max)" not in samples

    assert main(["compare", str(first), "--keys", "system/*"]) == 2
    assert "system samples are compared with --system" in capsys.readouterr().err


def test_compare_html_has_the_users_series_and_the_samples_in_a_section_of_their_own(tmp_path, capsys):
    first, second = demo_run(tmp_path, 1.0), demo_run(tmp_path, 2.0)
    page = tmp_path / "cmp.html"
    assert main(["compare", str(first), str(second), "--html", str(page)]) == 0
    html = page.read_text()
    assert "system/" not in html and html.count("<svg") == len(USER_KEYS)
    assert "<th>lr</th>" in html and "lr <small>" not in html  # no "(max is best)" beside a learning rate
    assert "train/loss <small>(min is best)</small>" in html
    assert "valid/accuracy <small>(max is best)</small>" in html
    assert "system samples not shown (4 per run)" in html

    assert main(["compare", str(first), str(second), "--html", str(page), "--system"]) == 0
    html = page.read_text()
    series, system = html.split('<section id="system">')
    assert "system/" not in series and series.count("<svg") == len(USER_KEYS)
    assert system.count("<svg") == 2 and "system/cpu.percent" in system and "is best" not in system
    assert system.count(">seconds since the run started</text>") == 2 and ">step</text>" not in system
    # each run's samples sit at 10, 20, 30, 40 s on that axis, not at the steps 0..29
    assert ">40</text>" in system and ">29</text>" not in system


def test_a_journal_with_system_records_counts_them_as_samples(tmp_path, capsys):
    old, new = journaled_run(tmp_path / "runs"), demo_run(tmp_path / "runs", 1.0)
    comparison = compare_runs([str(old), str(new)])
    assert comparison.keys == USER_KEYS and comparison.system_keys is None
    assert [run.samples.count for run in comparison.runs] == [3, 4]
    sampled = compare_runs([str(old), str(new)], system=True)
    assert sampled.system_keys == ["system/cpu.percent", "system/memory.used_gb"]
    assert sampled.runs[0].samples.points("system/cpu.percent") == [(0.0, 20.0), (10.0, 21.0), (20.0, 22.0)]
    assert "system/cpu.percent" not in sampled.runs[0].series


# -- show ------------------------------------------------------------------------------------------


def test_show_lists_the_users_metrics_and_the_samples_only_when_asked(tmp_path, capsys):
    new, old = demo_run(tmp_path / "runs", 1.0), journaled_run(tmp_path / "runs")
    assert main(["show", str(new), str(old)]) == 0
    text = capsys.readouterr().out
    assert "system/" not in text
    assert "system   4 samples, not shown" in text and "system   3 samples, not shown" in text
    assert "train/loss" in text and "valid/accuracy" in text

    assert main(["show", str(new), str(old), "--system"]) == 0
    text = capsys.readouterr().out
    first, second = text.split("=" * 80)
    assert "system samples (4 over 30 s; taken on a clock, not at steps)" in first
    cpu = next(line.split() for line in first.splitlines() if line.startswith("system/cpu.percent"))
    assert cpu == ["system/cpu.percent", "4", "13", "10", "11.5", "13"]
    assert "system samples (3 over 20 s" in second and "not shown" not in text
    metrics = second.split("system samples")[0]
    assert "system/" not in metrics  # the journal's system records are not listed among the metrics


def test_show_plot_draws_the_samples_on_their_own_axis_only_when_asked(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    drawn: list[list[tuple[str, str, list[float]]]] = []
    saved = Figure.savefig

    def keep(figure, *args, **kwargs):  # what each panel shows: title, x axis, x of its first line
        drawn.append(
            [
                (axis.get_title(), axis.get_xlabel(), list(axis.lines[0].get_xdata()))
                for axis in figure.axes
                if axis.lines
            ]
        )
        return saved(figure, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    new, old = demo_run(tmp_path / "runs", 1.0), journaled_run(tmp_path / "runs")
    assert main(["show", str(new), str(old), "--plot", str(tmp_path / "plain.png")]) == 0
    assert sorted(title for title, _, _ in drawn[0]) == USER_KEYS
    assert {axis for _, axis, _ in drawn[0]} == {"step"}

    assert main(["show", str(new), str(old), "--plot", str(tmp_path / "system.png"), "--system"]) == 0
    panels = {title: (axis, xs) for title, axis, xs in drawn[1]}
    assert sorted(panels) == sorted([*USER_KEYS, "system/cpu.percent", "system/memory.used_gb"])
    assert panels["system/cpu.percent"] == ("seconds since the run started", [10.0, 20.0, 30.0, 40.0])
    assert panels["train/loss"][0] == "step"
    assert (tmp_path / "system.png").read_bytes().startswith(b"\x89PNG")


# -- export ----------------------------------------------------------------------------------------


def test_export_writes_the_users_rows_and_the_samples_only_when_asked(tmp_path, capsys):
    new, old = demo_run(tmp_path / "runs", 1.0), journaled_run(tmp_path / "runs")
    assert main(["export", str(old), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {row["key"] for row in rows} == {"train/loss", "lr"} and len(rows) == 10 and "sample" not in rows[0]

    assert main(["export", str(new), "--format", "csv", "--system"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    samples = [row for row in rows if row["key"].startswith("system/")]
    assert len(samples) == 8 and {row["step"] for row in samples} == {""}
    assert [row["sample"] for row in samples if row["key"] == "system/cpu.percent"] == ["0", "1", "2", "3"]
    assert {row["sample"] for row in rows if not row["key"].startswith("system/")} == {""}

    assert main(["export", str(old), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert "samples" not in document and not any(row["key"].startswith("system/") for row in document["rows"])
    assert main(["export", str(old), "--format", "json", "--system"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [(row["sample"], row["value"]) for row in document["samples"] if row["key"] == "system/cpu.percent"] == [
        (0, 20.0),
        (1, 21.0),
        (2, 22.0),
    ]
    assert not any(row["key"].startswith("system/") for row in document["rows"])


def test_a_real_runs_samples_stay_out_of_the_views_by_default(tmp_path, capsys):
    """The sampler itself on (one sample at the finish at least): wherever it keeps them, they are samples."""
    run = tracking_core.init("real", logging_dir=tmp_path, system_metrics=True, context=False)
    for step in range(3):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    run.finish()
    assert main(["compare", str(run.run_dir), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result["series"]) == ["loss"] and result["runs"][0]["system_samples"] >= 1
    assert main(["compare", str(run.run_dir), "--json", "--system"]) == 0
    assert "system/cpu.percent" in json.loads(capsys.readouterr().out)["system"]


def test_export_parquet_with_the_samples_gives_them_a_sample_number_and_no_step(tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    new = demo_run(tmp_path / "runs", 1.0)
    target = tmp_path / "run.parquet"
    assert main(["export", str(new), "--format", "parquet", "-o", str(target)]) == 0
    assert "sample" not in pq.read_table(target).column_names
    assert main(["export", str(new), "--format", "parquet", "-o", str(target), "--system"]) == 0
    rows = pq.read_table(target).to_pylist()
    samples = [row for row in rows if row["key"] == "system/cpu.percent"]
    assert [(row["sample"], row["step"], row["value"]) for row in samples] == [(i, None, 10.0 + i) for i in range(4)]
    assert {row["sample"] for row in rows if row["key"] == "lr"} == {None}
