"""The arguments Lightning's own loggers take, with their meaning there: ``name``, ``version``,
``prefix`` and ``log_graph``, plus ``resume=True``. Each is checked against what the backends stored.
"""

from __future__ import annotations

import pytest
import torch
from tracking_lightning import TrackingLogger


def _runs(project_dir) -> list[str]:
    return sorted(path.parent.name for path in project_dir.glob("*/run.json"))


def _history(logger: TrackingLogger) -> dict:
    (tracker,) = [tracker for tracker in logger.trackers if tracker.name == "jsonl"]
    return tracker.read_back_history()


def test_prefix_joins_metric_keys_as_lightnings_loggers_do(tmp_path):
    from lightning.fabric.utilities.logger import _add_prefix
    from lightning.pytorch.loggers import TensorBoardLogger

    metrics = {"train_loss": 1.0, "val/acc": 0.5}
    logger = TrackingLogger(log_with="jsonl", project="prefix", logging_dir=tmp_path, prefix="fold1")
    logger.log_metrics(metrics, step=3)
    logger.finalize("success")
    expected = _add_prefix(metrics, "fold1", TensorBoardLogger.LOGGER_JOIN_CHAR)
    assert _history(logger) == {key: [(3, value)] for key, value in expected.items()}
    assert sorted(expected) == ["fold1-train_loss", "fold1-val/acc"]


def test_name_is_the_project(tmp_path):
    logger = TrackingLogger(log_with="jsonl", name="exp", logging_dir=tmp_path)
    assert logger.name == "exp" and logger.root_dir == str(tmp_path / "exp")
    logger.log_metrics({"loss": 1.0}, step=0)
    logger.finalize("success")
    assert _runs(tmp_path / "exp") == [logger.version]
    with pytest.raises(ValueError, match="same setting"):
        TrackingLogger(project="a", name="b")


def test_version_continues_that_run_and_resume_true_the_last_one(tmp_path):
    first = TrackingLogger(log_with="jsonl", project="versions", logging_dir=tmp_path)
    first.log_metrics({"loss": 1.0}, step=0)
    first.finalize("success")
    again = TrackingLogger(log_with="jsonl", project="versions", logging_dir=tmp_path, version=first.version)
    assert again.version == first.version
    again.log_metrics({"loss": 0.5}, step=1)
    again.finalize("success")
    last = TrackingLogger(log_with="jsonl", project="versions", logging_dir=tmp_path, resume=True)
    last.log_metrics({"loss": 0.25}, step=2)
    last.finalize("success")
    assert last.version == first.version
    assert _history(last)["loss"] == [(0, 1.0), (1, 0.5), (2, 0.25)]
    assert _runs(tmp_path / "versions") == [first.version]


def test_a_version_that_is_no_run_is_refused_at_construction(tmp_path):
    with pytest.raises(ValueError, match="no such run"):
        TrackingLogger(log_with="jsonl", project="versions", logging_dir=tmp_path, version="nope")
    with pytest.raises(TypeError, match="version must be"):
        TrackingLogger(log_with="jsonl", project="versions", logging_dir=tmp_path, version=0)
    with pytest.raises(ValueError, match="name different runs"):
        TrackingLogger(project="versions", logging_dir=tmp_path, version="a", resume="b")
    assert not (tmp_path / "versions").exists()


def _fit_one_epoch(tmp_path, logger) -> None:
    import lightning.pytorch as pl

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)
            self.example_input_array = torch.zeros(2, 4)

        def forward(self, inputs):
            return self.layer(inputs)

        def training_step(self, batch, batch_index):
            loss = self(batch[0]).pow(2).mean()
            self.log("loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4)), batch_size=4)
    trainer = pl.Trainer(
        max_epochs=1,
        accelerator="cpu",
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(Tiny(), data)


def test_log_graph_draws_the_model_in_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logger = TrackingLogger(log_with=["tensorboard", "jsonl"], project="graph", logging_dir=tmp_path, log_graph=True)
    _fit_one_epoch(tmp_path, logger)
    assert logger.report.ok, str(logger.report)
    (tensorboard,) = [tracker for tracker in logger.trackers if tracker.name == "tensorboard"]
    accumulator = EventAccumulator(str(tensorboard.log_dir))
    accumulator.Reload()
    graph = accumulator.Graph()  # the graph TensorBoard's Graphs tab shows
    assert any("Linear" in node.op or "linear" in node.name.lower() for node in graph.node), graph
    assert "loss" in accumulator.Tags()["scalars"]  # the run's own events are read from the same folder


def test_log_graph_without_tensorboard_warns_once(tmp_path):
    logger = TrackingLogger(log_with="jsonl", project="graph", logging_dir=tmp_path, log_graph=True)
    model = torch.nn.Linear(4, 1)
    with pytest.warns(UserWarning, match="TensorBoard only") as caught:
        logger.log_graph(model, torch.zeros(2, 4))
        logger.log_graph(model, torch.zeros(2, 4))  # as in a second fit of the same run
    assert len([w for w in caught if "log_graph" in str(w.message)]) == 1
    logger.finalize("success")
    assert logger.report.ok
