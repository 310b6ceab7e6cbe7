"""A run id the user names (a backend's ``run_id`` in ``init_kwargs``, as TensorBoard's) is the run's id.

A second run under a taken id is refused at ``init``, with the option that continues the earlier run
(``resume="<id>"``) named: two processes never write into one run folder without being told to.
"""

from __future__ import annotations

import json

import pytest
import tracking_core
from tracking_core import register_tracker_class
from tracking_core.store.journal import read_journal
from tracking_core.store.manifest import MANIFEST_NAME
from tracking_core.testing import MemoryTracker


class NamingMemory(MemoryTracker):
    """Stands for a backend whose ``run_id`` keyword names the run folder (TensorBoard's event folder)."""

    name = "naming"
    run_id_keyword = "run_id"


@pytest.fixture
def naming(memory):
    register_tracker_class(NamingMemory)
    return ["naming"]


def _run(tmp_path, log_with, value, run_id="baseline", **options):
    run = tracking_core.init(
        "proj", log_with=log_with, logging_dir=tmp_path, init_kwargs={"naming": {"run_id": run_id}}, **options
    )
    run.log({"loss": value}, step=0 if not run.resumed else None)
    run.finish()
    return run


def _losses(run_dir):
    return [
        entry["values"]["loss"] for entry in read_journal(run_dir / "journal.jsonl") if entry.get("type") == "metrics"
    ]


def test_the_named_run_id_is_the_run_id_and_folder(tmp_path, naming):
    run = _run(tmp_path, naming, 1.0)
    assert run.run_id == "baseline" and run.run_dir == tmp_path / "proj" / "baseline"
    assert json.loads((run.run_dir / MANIFEST_NAME).read_text())["run_id"] == "baseline"


def test_a_second_run_under_a_taken_id_is_refused_naming_resume(tmp_path, naming):
    first = _run(tmp_path, naming, 1.0)
    with pytest.raises(FileExistsError, match=r"run id 'baseline' is taken.*resume='baseline'.*another run id"):
        tracking_core.init(
            "proj", log_with=naming, logging_dir=tmp_path, init_kwargs={"naming": {"run_id": "baseline"}}
        )
    assert _losses(first.run_dir) == [1.0], "nothing of the refused run reached the earlier one"
    assert sorted(path.name for path in (tmp_path / "proj").iterdir()) == ["baseline"]


@pytest.mark.parametrize("resume", ["baseline", True])
def test_resume_continues_the_named_run(tmp_path, naming, resume):
    first = _run(tmp_path, naming, 1.0)
    second = _run(tmp_path, naming, 2.0, resume=resume)
    assert second.resumed and second.run_dir == first.run_dir
    assert _losses(first.run_dir) == [1.0, 2.0]
    steps = [e["step"] for e in read_journal(first.run_dir / "journal.jsonl") if e.get("type") == "metrics"]
    assert steps == [0, 1], "the resumed run carries on after the earlier one's last step"


def test_resume_true_with_a_new_named_id_starts_it(tmp_path, naming):
    _run(tmp_path, naming, 1.0, run_id="other")
    run = _run(tmp_path, naming, 1.0, resume=True)
    assert not run.resumed and run.run_id == "baseline", "resume=True with a named id resumes that id or none"


def test_resume_of_another_id_than_the_named_one_is_refused(tmp_path, naming):
    _run(tmp_path, naming, 1.0, run_id="other")
    with pytest.raises(ValueError, match=r"resume='other'.*run_id 'baseline'"):
        tracking_core.init(
            "proj",
            log_with=naming,
            logging_dir=tmp_path,
            init_kwargs={"naming": {"run_id": "baseline"}},
            resume="other",
        )


def test_two_backends_naming_two_ids_are_refused(tmp_path, naming):
    class OtherNaming(NamingMemory):
        name = "naming2"

    register_tracker_class(OtherNaming)
    kwargs = {"naming": {"run_id": "a"}, "naming2": {"run_id": "b"}}
    with pytest.raises(ValueError, match=r"two run ids"):
        tracking_core.init("proj", log_with=["naming", "naming2"], logging_dir=tmp_path, init_kwargs=kwargs)


def test_runs_without_a_named_id_still_get_fresh_ones(tmp_path, memory):
    first = tracking_core.init("proj", log_with="memory", logging_dir=tmp_path)
    first.finish()
    second = tracking_core.init("proj", log_with="memory", logging_dir=tmp_path)
    second.finish()
    assert first.run_id != second.run_id and not second.resumed
