"""Accelerate's own training loop with ``from tracking_accelerate import Accelerator`` as the only change.

A tiny regression model trains for a few steps on random data on CPU (prepare, backward, step, as in
accelerate's examples); what every backend stored is then read back with the SDK's own reader.
"""

from __future__ import annotations

import pytest
import torch
from accelerate.state import AcceleratorState, GradientState, PartialState
from accelerate.tracking import GeneralTracker as AccelerateGeneralTracker
from tracking_accelerate import Accelerator
from tracking_core import GeneralTracker
from tracking_tensorboard import TensorBoardTracker

STEPS_PER_EPOCH = 4
EPOCHS = 2


@pytest.fixture(autouse=True)
def fresh_accelerate_state():
    """accelerate keeps its state in process-wide singletons; each test starts with none."""
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    PartialState._reset_state()


def train(accelerator: Accelerator, epochs: int = EPOCHS) -> list[float]:
    """accelerate's minimal loop: y = 2x + 1 learned by a linear layer, logged at each optimizer step."""
    torch.manual_seed(0)
    x = torch.randn(STEPS_PER_EPOCH * 8, 1)
    dataset = torch.utils.data.TensorDataset(x, 2 * x + 1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=8)
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    losses, step = [], 0
    for epoch in range(epochs):
        for inputs, targets in loader:
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            accelerator.log({"train/loss": loss, "epoch": epoch}, step=step)  # a tensor, as scripts pass it
            losses.append(loss.item())
            step += 1
    return losses


def test_training_loop_reaches_every_backend_and_reads_back(tmp_path, read_back_of):
    accelerator = Accelerator(cpu=True, log_with=["tensorboard", "mlflow", "jsonl"], project_dir=tmp_path)
    accelerator.init_trackers(
        "accelerate-demo",
        config={"lr": 0.1, "epochs": EPOCHS, "optimizer": {"name": "sgd"}, "hub_token": "hf_abcdefghijklmnop"},
        init_kwargs={"mlflow": {"run_name": "baseline"}},
    )
    losses = train(accelerator)
    trackers = {tracker.name: tracker for tracker in accelerator.trackers}
    report = accelerator.end_training()

    assert report is not None and report.ok, str(report)
    assert sorted(trackers) == ["jsonl", "mlflow", "tensorboard"]
    steps = list(range(EPOCHS * STEPS_PER_EPOCH))
    for name, tracker in trackers.items():
        stored = read_back_of(tracker)
        assert stored.steps("train/loss") == steps, name
        assert stored.values("train/loss") == pytest.approx(losses, rel=1e-6), name  # float32 in TensorBoard
        assert stored.values("epoch") == [0] * STEPS_PER_EPOCH + [1] * STEPS_PER_EPOCH, name
        assert str(stored.config["lr"]) == "0.1" and stored.config["optimizer/name"] == "sgd", (name, stored.config)
        assert stored.config["hub_token"] == "<redacted>", name  # the secret never reaches a backend
    assert trackers["tensorboard"].log_dir.is_relative_to(tmp_path / "accelerate-demo")  # under project_dir
    assert trackers["mlflow"].tracker.info.run_name == "baseline"  # init_kwargs reach the constructor


def test_tracker_objects_are_accepted(tmp_path, read_back_of):
    import accelerate

    tensorboard = TensorBoardTracker("objects", tmp_path)
    with pytest.raises(ValueError, match="Unsupported logging capability"):
        accelerate.Accelerator(cpu=True, log_with=tensorboard)  # what this package exists for
    AcceleratorState._reset_state(reset_partial_state=True)

    accelerator = Accelerator(cpu=True, log_with=[tensorboard, "jsonl"], project_dir=tmp_path)
    accelerator.init_trackers("objects", config={"lr": 0.1})
    train(accelerator, epochs=1)
    assert accelerator.get_tracker("tensorboard") is tensorboard
    assert accelerator.get_tracker("tensorboard", unwrap=True) is tensorboard.tracker  # waits for start()
    assert accelerator.end_training().ok
    assert read_back_of(tensorboard).steps("train/loss") == list(range(STEPS_PER_EPOCH))


class RecordingTracker(AccelerateGeneralTracker):
    """A custom tracker written for accelerate (its base class), as a user's script has one."""

    name = "recording"
    requires_logging_directory = False

    def __init__(self, run_name: str = "run", **kwargs):
        super().__init__()
        self.run_name, self.options, self.calls = run_name, kwargs, []

    @property
    def tracker(self):
        return self.calls

    def start(self):
        self.calls.append(("start", self.run_name))

    def store_init_configuration(self, values):
        self.calls.append(("config", values))

    def log(self, values, step=None, **kwargs):
        self.calls.append(("log", step, values))

    def finish(self):
        self.calls.append(("finish",))


def test_accelerate_tracker_objects_still_work(tmp_path):
    recording = RecordingTracker()
    accelerator = Accelerator(cpu=True, log_with=[recording, "jsonl"], project_dir=tmp_path)
    accelerator.init_trackers("mixed", config={"lr": 0.1})
    accelerator.log({"loss": 1.5}, step=3)
    assert accelerator.get_tracker("recording") is recording  # handed back as given, not as its wrapper
    assert recording in accelerator.trackers
    assert accelerator.end_training().ok
    assert recording.calls == [("start", "run"), ("config", {"lr": 0.1}), ("log", 3, {"loss": 1.5}), ("finish",)]


def test_accelerate_tracker_objects_run_on_the_callers_thread(tmp_path):
    import threading

    recording = RecordingTracker()
    threads = []
    recording.log = lambda values, step=None, **kwargs: threads.append(threading.get_ident())
    recording.start = lambda: threads.append(threading.get_ident())
    accelerator = Accelerator(cpu=True, log_with=recording, project_dir=tmp_path)
    accelerator.init_trackers("thread")
    accelerator.log({"loss": 1.0}, step=0)
    assert accelerator.end_training().ok
    assert threads == [threading.get_ident()] * 2  # as accelerate calls them: SDK state per thread stays the script's


def test_accelerate_mlflow_tracker_called_directly_logs_into_its_run(tmp_path, monkeypatch):
    """accelerate's MLflowTracker keeps MLflow's fluent active run, which is per thread: started by
    the dispatcher, it must be the run that the script's own ``tracker.log(...)`` reaches."""
    mlflow = pytest.importorskip("mlflow")
    from accelerate.tracking import MLflowTracker as AccelerateMLflowTracker

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.chdir(tmp_path)  # MLflow's default store (sqlite:///mlflow.db) is relative to the working directory
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        tracker = AccelerateMLflowTracker(experiment_name="direct", logging_dir=str(tmp_path / "artifacts"))
        accelerator = Accelerator(cpu=True, log_with=tracker)
        accelerator.init_trackers("direct")
        tracker.log({"accuracy": 0.95}, step=10)  # accelerate's own method, from the script
        accelerator.log({"loss": 0.5}, step=11, log_kwargs={"mlflow": {"synchronous": True}})
        run_id = tracker.active_run.info.run_id
        assert accelerator.end_training().ok
        history = mlflow.MlflowClient().get_metric_history
        assert [(m.step, m.value) for m in history(run_id, "accuracy")] == [(10, 0.95)]
        assert [(m.step, m.value) for m in history(run_id, "loss")] == [(11, 0.5)]
        assert mlflow.get_run(run_id).info.status == "FINISHED"
    finally:
        mlflow.set_tracking_uri(previous)


def test_a_name_registered_with_accelerate_is_built_by_accelerate_rules(tmp_path):
    from accelerate.tracking import LOGGER_TYPE_TO_CLASS

    LOGGER_TYPE_TO_CLASS["recording"] = RecordingTracker
    try:
        accelerator = Accelerator(cpu=True, log_with="recording", project_dir=tmp_path)
        accelerator.init_trackers("registered", init_kwargs={"recording": {"colour": "blue"}})
        accelerator.log({"loss": 1.0})
        recording = accelerator.get_tracker("recording")
        assert accelerator.end_training().ok
    finally:
        del LOGGER_TYPE_TO_CLASS["recording"]
    assert isinstance(recording, RecordingTracker) and recording.options == {"colour": "blue"}
    assert recording.calls[0] == ("start", "registered") and recording.calls[1] == ("log", 0, {"loss": 1.0})


class BrokenTracker(GeneralTracker):
    name = "broken"
    requires_logging_directory = False

    def __init__(self, *args, **kwargs):
        super().__init__()

    @property
    def tracker(self):
        return None

    def log(self, values, step=None, **kwargs):
        raise ConnectionError("the tracking server went away")


def test_a_failing_backend_does_not_stop_training_or_the_others(tmp_path, read_back_of):
    accelerator = Accelerator(cpu=True, log_with=[BrokenTracker(), "jsonl"], project_dir=tmp_path)
    accelerator.init_trackers("isolation")
    losses = train(accelerator, epochs=1)  # log() returns at once: delivery happens in the workers
    journal = accelerator.get_tracker("jsonl")
    report = accelerator.end_training()
    assert not report.ok and report.backends["jsonl"].errors == 0 and report.backends["jsonl"].delivered > 0
    assert report.backends["broken"].spilled == STEPS_PER_EPOCH  # kept for `tracking replay`, not lost
    assert read_back_of(journal).values("train/loss") == pytest.approx(losses)


def test_log_with_all_selects_every_installed_backend(tmp_path):
    from accelerate.utils import LoggerType

    accelerator = Accelerator(cpu=True, log_with=LoggerType.ALL, project_dir=tmp_path)  # accelerate's own enum
    accelerator.init_trackers("all")
    names = sorted(tracker.name for tracker in accelerator.trackers)
    accelerator.end_training()
    assert {"jsonl", "mlflow", "tensorboard"} <= set(names)


def test_a_backend_that_writes_files_needs_project_dir():
    with pytest.raises(ValueError, match="project_dir"):
        Accelerator(cpu=True, log_with="tensorboard")


def test_logging_dir_of_project_configuration_is_used(tmp_path):
    from accelerate.utils import ProjectConfiguration

    config = ProjectConfiguration(project_dir=tmp_path / "project", logging_dir=tmp_path / "logs")
    accelerator = Accelerator(cpu=True, log_with="tensorboard", project_config=config)
    accelerator.init_trackers("configured")
    accelerator.log({"loss": 1.0})
    tensorboard = accelerator.get_tracker("tensorboard")
    accelerator.end_training()
    assert tensorboard.log_dir.is_relative_to(tmp_path / "logs" / "configured")


def test_without_log_with_nothing_is_tracked(tmp_path):
    accelerator = Accelerator(cpu=True, project_dir=tmp_path)
    accelerator.init_trackers("nothing", config={"lr": 1})
    accelerator.log({"loss": 1.0})
    assert accelerator.trackers == [] and accelerator.tracking is None
    assert accelerator.get_tracker("mlflow").name == "mlflow"  # a stand-in accepting every call, as accelerate's
    assert accelerator.end_training() is None
    assert list(tmp_path.iterdir()) == []


def test_get_tracker_before_init_trackers_is_a_stand_in(tmp_path):
    accelerator = Accelerator(cpu=True, log_with="jsonl", project_dir=tmp_path)
    stand_in = accelerator.get_tracker("jsonl")
    stand_in.log({"loss": 1.0})  # does nothing, as accelerate's blank tracker would
    assert stand_in.name == "jsonl" and accelerator.trackers == []


def test_init_trackers_twice_raises_instead_of_doubling_every_point(tmp_path):
    accelerator = Accelerator(cpu=True, log_with="jsonl", project_dir=tmp_path)
    accelerator.init_trackers("twice")
    with pytest.raises(RuntimeError, match="already"):
        accelerator.init_trackers("twice")
    accelerator.end_training()


def test_importing_the_package_does_not_import_accelerate():
    import subprocess
    import sys

    code = "import sys, tracking_accelerate; print('accelerate' in sys.modules, 'torch' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]


def test_documentation_examples_run(tmp_path, run_docs_page):
    run_docs_page("integrations/accelerate.md", tmp_path)  # the core cell leaves this page to this one


def test_clearml_values_without_a_step_are_single_values_as_in_accelerate(tmp_path, monkeypatch):
    pytest.importorskip("tracking_clearml")
    from tracking_clearml.reader import OfflineSession

    monkeypatch.setenv("CLEARML_CONFIG_FILE", str(tmp_path / "no-clearml.conf"))  # no server: an offline session
    accelerator = Accelerator(cpu=True, log_with=["clearml", "jsonl"], project_dir=tmp_path)
    accelerator.init_trackers("single-values")
    accelerator.log({"eval_loss": 0.5, "loss": 0.7}, step=1)
    accelerator.log({"eval_value": 2.0, "final": 1.1})  # no step: ClearML's single values ("Summary")
    accelerator.log({"loss": 0.6}, step=3, log_kwargs={"clearml": {"single_value": False}})
    clearml = accelerator.get_tracker("clearml")
    journal = accelerator.get_tracker("jsonl")
    assert accelerator.end_training().ok
    session = OfflineSession(f"{clearml.offline_folder}.zip")
    assert session.single_values() == {"eval_value": 2.0, "final": 1.1}  # the whole key, as accelerate reports it
    assert session.scalar_history() == {"eval_loss": [(1, 0.5)], "loss": [(1, 0.7), (3, 0.6)]}
    from tracking_core.store.journal import JournalSummary

    assert JournalSummary(journal.run_dir).metrics["final"] == [(2, 1.1)]  # the other backends: the next step
