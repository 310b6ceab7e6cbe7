"""Lightning's minimal example (a LightningModule, ``Trainer.fit``) with ``logger=TrackingLogger(...)``.

A linear regressor trains for two short epochs on random data on CPU, validating each epoch, with
Lightning's own ``CSVLogger`` alongside as the reference of what Lightning logged; what every backend
stored is then read back with the SDK's own reader and compared with it.
"""

from __future__ import annotations

import csv

import pytest
import torch
from tracking_lightning import TrackingLogger

TRAIN_BATCHES = 4
EPOCHS = 2
#: Backends whose reader shows config added after the start (Dispatcher.log_config). TensorBoard's hparams
#: dashboard keeps the first session_start_info of a run: see test_tensorboard_shows_late_hyperparameters.
LATE_CONFIG_READERS = ("mlflow", "jsonl")


def _module_class(pl):
    class Regressor(pl.LightningModule):
        def __init__(self, lr: float = 0.05, hidden: int = 8, optimizer: dict | None = None):
            super().__init__()
            self.save_hyperparameters()
            self.layers = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))

        def training_step(self, batch, batch_index):
            inputs, targets = batch
            loss = torch.nn.functional.mse_loss(self.layers(inputs), targets)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, batch_index):
            inputs, targets = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.layers(inputs), targets))

        def test_step(self, batch, batch_index):
            inputs, targets = batch
            self.log("test_loss", torch.nn.functional.mse_loss(self.layers(inputs), targets))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    return Regressor


def _loader(seed: int, batches: int) -> torch.utils.data.DataLoader:
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(batches * 8, 4, generator=generator)
    targets = inputs.sum(dim=1, keepdim=True)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, targets), batch_size=8)


def _trainer(pl, loggers, tmp_path):
    return pl.Trainer(
        max_epochs=EPOCHS,
        accelerator="cpu",
        devices=1,
        logger=loggers,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )


def _csv_series(csv_logger, key: str) -> list[tuple[int, float]]:
    with open(f"{csv_logger.log_dir}/metrics.csv", newline="") as file:
        return [(int(row["step"]), float(row[key])) for row in csv.DictReader(file) if row.get(key)]


def _fit_and_compare(pl, tmp_path, read_back_of, project: str) -> TrackingLogger:
    torch.manual_seed(0)
    logger = TrackingLogger(
        log_with=["tensorboard", "mlflow", "jsonl"], project=project, logging_dir=tmp_path / "runs", config={"seed": 0}
    )
    reference = pl.loggers.CSVLogger(tmp_path / "csv")
    model = _module_class(pl)(lr=0.05, hidden=8, optimizer={"name": "sgd", "momentum": 0.0})
    trainer = _trainer(pl, [logger, reference], tmp_path)
    trainer.fit(model, _loader(1, TRAIN_BATCHES), _loader(2, 2))
    assert logger.report is not None and logger.report.ok, str(logger.report)

    train_loss = _csv_series(reference, "train_loss")
    val_loss = _csv_series(reference, "val_loss")
    assert len(train_loss) == EPOCHS * TRAIN_BATCHES and len(val_loss) == EPOCHS  # the reference is complete
    trackers = {tracker.name: tracker for tracker in logger.trackers}
    assert sorted(trackers) == ["jsonl", "mlflow", "tensorboard"]
    for name, tracker in trackers.items():
        stored = read_back_of(tracker)
        for key, expected in (("train_loss", train_loss), ("val_loss", val_loss)):
            assert stored.steps(key) == [step for step, _ in expected], (name, key)
            assert stored.values(key) == pytest.approx([value for _, value in expected], rel=1e-6), (name, key)
        config = stored.config
        assert float(config["seed"]) == 0, (name, config)  # given at the start
        if name in LATE_CONFIG_READERS:  # Lightning hands the hyperparameters over after the start
            assert float(config["lr"]) == 0.05 and float(config["hidden"]) == 8, (name, config)
            assert config["optimizer/name"] == "sgd", (name, config)
    assert logger.log_dir == str(tmp_path / "runs" / project / logger.version)  # the run's folder
    return logger


def test_fit_reaches_every_backend_and_matches_lightnings_own_csv(tmp_path, read_back_of):
    import lightning.pytorch as pl

    _fit_and_compare(pl, tmp_path, read_back_of, "regressor")


def test_pytorch_lightning_trainer_takes_the_same_logger(tmp_path, read_back_of):
    import pytorch_lightning as pl

    _fit_and_compare(pl, tmp_path, read_back_of, "regressor-pl")


def test_test_after_fit_goes_to_the_same_run(tmp_path, read_back_of):
    import lightning.pytorch as pl

    logger = TrackingLogger(log_with=["mlflow", "jsonl"], project="regressor", logging_dir=tmp_path / "runs")
    model = _module_class(pl)()
    trainer = _trainer(pl, logger, tmp_path)
    trainer.fit(model, _loader(1, TRAIN_BATCHES), _loader(2, 2))
    version = logger.version
    (results,) = trainer.test(model, _loader(3, 2))
    assert logger.version == version  # reopened, not a new run
    assert logger.report.ok, str(logger.report)
    for tracker in logger.trackers:
        stored = read_back_of(tracker)
        assert stored.values("test_loss") == pytest.approx([results["test_loss"]], rel=1e-6), tracker.name
        assert len(stored.history["train_loss"]) == EPOCHS * TRAIN_BATCHES, tracker.name  # fit's points are there


def _late_hyperparameters(tmp_path, log_with) -> TrackingLogger:
    logger = TrackingLogger(log_with=log_with, project="late", logging_dir=tmp_path, config={"seed": 0})
    logger.experiment.log({"loss": 1.0}, step=0)  # what Lightning does first: touch the experiment
    logger.log_hyperparams({"lr": 0.1, "layers": [8, 8]})
    logger.log_metrics({"loss": 0.5}, step=1)
    logger.finalize("success")
    assert logger.report.ok, str(logger.report)
    return logger


def test_hyperparameters_after_the_run_started_are_kept(tmp_path, read_back_of):
    for tracker in _late_hyperparameters(tmp_path, LATE_CONFIG_READERS).trackers:
        stored = read_back_of(tracker)
        assert float(stored.config["lr"]) == 0.1 and float(stored.config["seed"]) == 0, (tracker.name, stored.config)
        assert stored.history["loss"] == [(0, 1.0), (1, 0.5)], tracker.name


def test_tensorboard_shows_late_hyperparameters(tmp_path, read_back_of):
    (tracker,) = _late_hyperparameters(tmp_path, ["tensorboard"]).trackers
    config = read_back_of(tracker).config
    assert config.get("lr") == 0.1 and config.get("seed") == 0, config  # TensorBoard's hparams are floats


def test_other_ranks_log_nothing(tmp_path, monkeypatch):
    from lightning.pytorch.utilities.rank_zero import rank_zero_only

    monkeypatch.setattr(rank_zero_only, "rank", 1)  # what a Trainer sets on its second process
    logger = TrackingLogger(log_with="jsonl", project="ranks", logging_dir=tmp_path)
    logger.log_hyperparams({"lr": 0.1})
    logger.log_metrics({"loss": 1.0}, step=0)
    logger.experiment.log_images({"x": None})  # a stand-in on other ranks: accepts any call
    logger.finalize("success")
    assert logger.version is None and logger.report is None
    assert not (tmp_path / "ranks").exists()


def test_importing_the_package_does_not_import_lightning():
    import subprocess
    import sys

    code = "import sys, tracking_lightning; print('lightning' in sys.modules, 'torch' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]


def test_documentation_examples_run(tmp_path, run_docs_page):
    run_docs_page("integrations/lightning.md", tmp_path)  # the core cell leaves this page to this one
