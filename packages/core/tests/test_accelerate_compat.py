"""Code written for accelerate.tracking moves over by changing the import."""

from __future__ import annotations

import pytest
import tracking_core
from tracking_core import (
    Dispatcher,
    GeneralTracker,
    LoggerType,
    get_available_trackers,
    on_main_process,
    register_tracker_class,
)
from tracking_core.testing import MemoryTracker


class CSVTracker(GeneralTracker):
    """The custom tracker of accelerate's docs, logging to a CSV file."""

    name = "my_csv"
    requires_logging_directory = True

    def __init__(self, run_name: str, logging_dir: str, **kwargs):
        super().__init__()
        self.run_name = run_name
        self.logging_dir = logging_dir
        self.kwargs = kwargs
        self.file = None
        self.started = False

    @property
    def tracker(self):
        return self.file

    @on_main_process
    def start(self):
        import os

        os.makedirs(self.logging_dir, exist_ok=True)
        self.file = open(os.path.join(self.logging_dir, f"{self.run_name}.csv"), "w")
        self.started = True

    @on_main_process
    def log(self, values: dict, step: int | None = None, **kwargs):
        for key, value in values.items():
            self.file.write(f"{step},{key},{value}\n")

    @on_main_process
    def finish(self):
        self.file.close()


def test_custom_tracker_instance_in_log_with(tmp_path):
    tracker = CSVTracker("run", str(tmp_path))
    run = Dispatcher(log_with=[tracker])
    run.init_trackers("project")
    run.log({"loss": 0.5}, step=3)
    assert run.finish().ok
    assert tracker.started
    assert (tmp_path / "run.csv").read_text() == "3,loss,0.5\n"


def test_register_by_name_uses_constructor_convention(tmp_path):
    register_tracker_class(CSVTracker)
    assert "my_csv" in get_available_trackers()
    run = Dispatcher(log_with="my_csv", logging_dir=tmp_path)
    run.init_trackers("proj", init_kwargs={"my_csv": {"flavour": "x"}})
    tracker = run.get_tracker("my_csv")
    assert (tracker.run_name, tracker.logging_dir, tracker.kwargs) == ("proj", str(tmp_path), {"flavour": "x"})
    run.log({"a": 1}, step=0)
    run.finish()
    assert (tmp_path / "proj.csv").read_text() == "0,a,1\n"


def test_registered_names_are_part_of_all(tmp_path):
    register_tracker_class(MemoryTracker)
    run = Dispatcher(log_with="all", logging_dir=tmp_path)
    assert {"memory", "jsonl"} <= {spec.name for spec in run.state.specs}


@pytest.mark.parametrize(
    "bad, message",
    [
        (int, "subclass of `GeneralTracker`"),
        (type("NoName", (GeneralTracker,), {"requires_logging_directory": False}), "non-empty `name`"),
        (type("EmptyName", (GeneralTracker,), {"name": "", "requires_logging_directory": False}), "non-empty `name`"),
        (type("NoDir", (GeneralTracker,), {"name": "nodir"}), "requires_logging_directory"),
    ],
)
def test_register_rejects_invalid_classes(bad, message):
    with pytest.raises(ValueError, match=message):
        register_tracker_class(bad)


def test_register_overwrite_warns():
    register_tracker_class(MemoryTracker)
    replacement = type("Other", (MemoryTracker,), {})
    with pytest.warns(UserWarning, match="already refers to"):
        register_tracker_class(replacement)
    with pytest.warns(UserWarning, match="installed backend 'jsonl'"):
        register_tracker_class(type("MyJsonl", (MemoryTracker,), {"name": "jsonl"}))


def test_missing_attributes_raise_not_implemented():
    class Incomplete(GeneralTracker):
        name = "incomplete"

    with pytest.raises(NotImplementedError, match=r"requires_logging_directory.*tracker"):
        Incomplete()
    Incomplete(_blank=True)  # blank trackers skip the check, as in accelerate


def test_logging_dir_requirement_is_checked_at_the_door():
    register_tracker_class(CSVTracker)
    with pytest.raises(ValueError, match="'my_csv' requires a logging directory"):
        Dispatcher(log_with="my_csv")


def test_none_kwargs_are_accepted(memory, tmp_path):
    run = Dispatcher(log_with="memory", logging_dir=tmp_path)
    run.init_trackers("p", config=None, init_kwargs=None)
    run.log({"a": 1}, step=None, log_kwargs=None)
    assert run.finish().ok


def test_start_is_deferred_to_the_worker(tmp_path):
    constructed = []

    class Recording(MemoryTracker):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            constructed.append(self.started)

    register_tracker_class(Recording)
    run = Dispatcher(log_with="memory", logging_dir=tmp_path)
    run.init_trackers("p")
    assert constructed == [False]  # constructing did not start it
    run.flush()
    assert MemoryTracker.runs[-1].started
    assert run.finish().ok


def test_log_kwargs_reach_only_their_tracker(tmp_path):
    seen = {}

    class Kw(MemoryTracker):
        def log(self, values, step=None, **kwargs):
            seen.update(kwargs)
            super().log(values, step)

    register_tracker_class(Kw)
    run = Dispatcher(log_with=["memory", "jsonl"], logging_dir=tmp_path, blocking=True)
    run.init_trackers("p")
    run.log({"a": 1}, step=0, log_kwargs={"memory": {"commit": False}})
    run.finish()
    assert seen == {"commit": False}


def test_logger_type_and_end_training(memory, tmp_path):
    assert LoggerType.MLFLOW == "mlflow" and "all" in LoggerType.list()
    run = Dispatcher(log_with=[LoggerType.JSONL], logging_dir=tmp_path)
    run.init_trackers("p")
    assert [t.name for t in run.trackers] == ["jsonl"]
    assert run.end_training().ok


def test_unknown_and_uninstalled_names_fail_clearly():
    with pytest.raises(ValueError, match="Unknown tracker 'nope'"):
        Dispatcher(log_with="nope")
    known_but_missing = [name for name in LoggerType.list() if name not in ("all", *get_available_trackers())]
    if known_but_missing:
        from tracking_core.contract.registry import install_command

        name = known_but_missing[0]
        with pytest.raises(tracking_core.BackendNotInstalledError) as caught:
            Dispatcher(log_with=name, logging_dir=".")
        assert f"Install it with: {install_command(name)}" in str(caught.value)


def test_the_install_hint_is_the_backends_folder_from_a_clone_and_its_name_from_an_index(monkeypatch, tmp_path):
    from tracking_core.contract import registry

    clone = tmp_path / "my clone" / "packages"
    for folder in ("core", "comet_ml"):
        (clone / folder).mkdir(parents=True)
        (clone / folder / "pyproject.toml").write_text("[project]\n")
    monkeypatch.setattr(registry, "_source_folder", lambda: clone / "core")
    assert registry.install_command("comet_ml") == f"pip install '{clone / 'comet_ml'}'"  # quoted: a space
    assert registry.install_command("wandb") == "pip install tracking-wandb"  # not in that clone
    monkeypatch.setattr(registry, "_source_folder", lambda: None)
    assert registry.install_command("comet_ml") == "pip install tracking-comet-ml"


def test_init_twice_raises_and_finish_twice_is_a_no_op(tmp_path):
    run = Dispatcher(logging_dir=tmp_path)
    run.init_trackers("p")
    with pytest.raises(RuntimeError, match="already called"):
        run.init_trackers("p")
    assert not run.finished
    first = run.finish()
    assert run.finished  # what a second holder of the run (a Lightning logger) checks before logging
    assert run.finish() is first


def test_get_tracker(memory, tmp_path):
    run = Dispatcher(log_with="memory", logging_dir=tmp_path)
    run.init_trackers("p")
    tracker = run.get_tracker("memory")
    assert isinstance(tracker, MemoryTracker)
    assert run.get_tracker("memory", unwrap=True) is tracker  # MemoryTracker.tracker is itself
    with pytest.raises(ValueError, match="not a tracker of this run"):
        run.get_tracker("wandb")
    run.finish()
