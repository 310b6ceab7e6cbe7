"""``Trainer.fit(ckpt_path=...)`` with ``TrackingLogger(ckpt_path=...)``: the run that wrote the checkpoint goes on.

Two epochs train and checkpoint; the checkpoint is copied elsewhere (the run id is read from its
contents, not its location); a new process-like start (new logger, new trainer) resumes from it for
two more epochs. The journal then holds one run whose steps go on without a gap or a repeat.
"""

from __future__ import annotations

import shutil

import pytest
import torch
from tracking_lightning import TrackingLogger

BATCHES = 2


def _trainer_fit(tmp_path, logger, epochs, ckpt_path=None):
    import lightning.pytorch as pl

    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_index):
            inputs, targets = batch
            loss = torch.nn.functional.mse_loss(self.layer(inputs), targets)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    inputs = torch.randn(8 * BATCHES, 4, generator=torch.Generator().manual_seed(1))
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, inputs.sum(1, keepdim=True)), 8)
    trainer = pl.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        logger=logger,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(Regressor(), data, ckpt_path=ckpt_path)
    assert logger.report.ok, str(logger.report)
    return trainer


def test_fit_from_a_checkpoint_continues_the_run_that_wrote_it(tmp_path):
    first = TrackingLogger(log_with="jsonl", project="resume", logging_dir=tmp_path / "runs")
    trainer = _trainer_fit(tmp_path, first, epochs=2)
    saved = trainer.checkpoint_callback.best_model_path
    assert saved.startswith(first.log_dir)  # Lightning puts checkpoints in the logger's run folder
    moved = tmp_path / "elsewhere" / "model.ckpt"
    moved.parent.mkdir()
    shutil.copy(saved, moved)

    again = TrackingLogger(log_with="jsonl", project="resume", logging_dir=tmp_path / "runs", ckpt_path=moved)
    assert again.version == first.version
    _trainer_fit(tmp_path, again, epochs=4, ckpt_path=moved)
    (tracker,) = again.trackers
    steps = [step for step, _ in tracker.read_back_history()["train_loss"]]
    assert steps == list(range(4 * BATCHES))  # the resumed fit's steps follow the first fit's
    assert sorted(path.parent.name for path in (tmp_path / "runs" / "resume").glob("*/run.json")) == [first.version]


def test_a_checkpoint_of_no_run_here_starts_a_new_run_with_a_warning(tmp_path):
    foreign = tmp_path / "foreign.ckpt"
    torch.save({"callbacks": {"ModelCheckpoint": {"dirpath": str(tmp_path / "other" / "x" / "checkpoints")}}}, foreign)
    with pytest.warns(UserWarning, match="a new run starts"):
        logger = TrackingLogger(log_with="jsonl", project="resume", logging_dir=tmp_path / "runs", ckpt_path=foreign)
    logger.log_metrics({"loss": 1.0}, step=0)
    logger.finalize("success")
    assert logger.report.ok and logger.version is not None
    with pytest.raises(FileNotFoundError):
        TrackingLogger(project="resume", logging_dir=tmp_path / "runs", ckpt_path=tmp_path / "missing.ckpt")
