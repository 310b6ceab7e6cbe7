"""Trackio's first releases (0.0.3 to 0.0.16), whose store numbers a run's rows itself: every row in order, once,
the config kept, one warning and one note; read back with the release's own reader and imported as stored."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from tracking_core import Dispatcher, FinishReport
from tracking_core.cli import main
from tracking_core.notices import reset_warnings
from tracking_core.store.journal import read_journal
from tracking_trackio import store
from tracking_trackio.older import v0_0_3 as first

from .test_contract import read_config, run_python

pytestmark = pytest.mark.skipif(not first.numbers_rows(), reason="this trackio release stores the steps given")

#: The steps of the rows logged below: repeated, sparse, and one left to the backend.
STEPS = [0, 10, 10, 25, None, 40]


@pytest.fixture
def numbered_run(tmp_path: Path) -> tuple[Dispatcher, FinishReport, list[warnings.WarningMessage]]:
    reset_warnings()  # the steps warning is once per process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dispatcher = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "runs", on_error="raise")
        dispatcher.init_trackers("numbered", config={"lr": 0.1, "model": {"depth": 2}})
        for index, step in enumerate(STEPS):
            dispatcher.log({"loss": 1.0 / (index + 1), "phase": f"p{index}"}, step=step)
            if index == 2:
                dispatcher.log_config({"model": {"width": 8}})  # between rows, each of which would blank it
        report = dispatcher.finish(timeout=120)
    assert report.ok, str(report)
    return dispatcher, report, list(caught)


def test_every_row_in_order_once_with_one_warning_and_a_note(numbered_run, tmp_path: Path) -> None:
    dispatcher, report, caught = numbered_run
    assert [str(w.message) for w in caught].count(f"[trackio] 'steps': {first.STEPS_NOTE}") == 1
    assert report.backends["trackio"].notes.count(first.STEPS_NOTE) == 1
    tracker = dispatcher.get_tracker("trackio", unwrap=False)
    logs = store.run_logs("numbered", tracker.run.name)  # Trackio's own reader (0.0.3: its dashboard's, pandas)
    assert [(row["step"], row["phase"]) for row in logs] == [(number, f"p{number}") for number in range(len(STEPS))]
    assert [row["loss"] for row in logs] == pytest.approx([1.0 / (number + 1) for number in range(len(STEPS))])
    assert tracker.read_back_metrics() == {"loss": {number: 1.0 / (number + 1) for number in range(len(STEPS))}}
    stored = read_config(tmp_path / "runs", "numbered")
    assert {key: value for key, value in stored.items() if key != "run_context"} == {
        "lr": 0.1,
        "model": {"depth": 2, "width": 8},
    }


def test_the_importer_reads_the_rows_as_stored_and_says_the_steps_are_not(numbered_run, tmp_path: Path, capsys) -> None:
    dispatcher, _, _ = numbered_run
    source = dispatcher.get_tracker("trackio", unwrap=False).storage_dir
    assert main(["import", "trackio", str(source), "--logging-dir", str(tmp_path / "imported")]) == 0
    printed = capsys.readouterr()
    assert f"not carried: {first.NO_STEPS}" in printed.out + printed.err
    [journal] = [path.parent for path in (tmp_path / "imported").glob("*/*/run.json")]
    points = [(record["step"], record["values"]) for record in read_journal(journal) if record.get("type") == "metrics"]
    losses = [(step, values["loss"]) for step, values in points if "loss" in values]
    assert losses == [(number, pytest.approx(1.0 / (number + 1))) for number in range(len(STEPS))]


def test_an_import_that_lacks_what_the_release_does_not_declare_says_what_to_install(tmp_path: Path) -> None:
    """trackio 0.0.3 imports gradio and pandas and declares neither; every first release imports gradio."""
    result = run_python(
        """
        import sys
        sys.modules["gradio"] = None  # as if gradio were not installed
        from tracking_trackio.older import v0_0_3 as first
        try:
            first.import_trackio()
        except ModuleNotFoundError as error:
            print(error)
        """,
        tmp_path,
    )
    assert "pip install gradio (it brings pandas)" in result.stdout, result.stdout + result.stderr
