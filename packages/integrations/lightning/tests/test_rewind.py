"""``Trainer.fit(ckpt_path=...)`` alone (the logger is not told): the logger reopens the run that wrote the
checkpoint and, since the checkpoint is older than the run's last step, rewinds the run to the checkpoint's
step. Read back from the journal and TensorBoard: each step once, the resumed fit's points from there on.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tracking_core.store.journal import JournalSummary
from tracking_lightning import TrackingLogger
from tracking_lightning.checkpoints import checkpoint_step

BATCHES = 2


def _fit(tmp_path, logger, epochs, ckpt_path=None, shift=0.0):
    import lightning.pytorch as pl

    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_index):
            inputs, targets = batch
            loss = torch.nn.functional.mse_loss(self.layer(inputs), targets)
            self.log("train_loss", loss.detach() + shift)  # tells the resumed fit's points from the first's
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    inputs = torch.randn(8 * BATCHES, 4, generator=torch.Generator().manual_seed(1))
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, inputs.sum(1, keepdim=True)), 8)
    every_epoch = pl.callbacks.ModelCheckpoint(save_top_k=-1)
    trainer = pl.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        logger=logger,
        callbacks=[every_epoch],
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(Regressor(), data, ckpt_path=ckpt_path)
    assert logger.report.ok, str(logger.report)
    return trainer


def test_fit_from_an_older_checkpoint_reopens_its_run_and_rewinds_it(tmp_path):
    runs = tmp_path / "runs"
    first = TrackingLogger(log_with=["jsonl", "tensorboard"], project="rewind", logging_dir=runs)
    _fit(tmp_path, first, epochs=3)  # steps 0..5; a checkpoint after each epoch
    older = Path(first.log_dir) / "checkpoints" / f"epoch=0-step={BATCHES}.ckpt"  # Lightning's place: the run's
    assert checkpoint_step(older) == BATCHES

    again = TrackingLogger(log_with=["jsonl", "tensorboard"], project="rewind", logging_dir=runs)
    _fit(tmp_path / "second", again, epochs=3, ckpt_path=older, shift=100.0)
    assert again.version == first.version, "Trainer.fit(ckpt_path=...) did not reopen the checkpoint's run"
    assert sorted(path.parent.name for path in (runs / "rewind").glob("*/run.json")) == [first.version]
    run_dir = runs / "rewind" / first.version
    assert [point["step"] for point in json.loads((run_dir / "run.json").read_text())["rewinds"]] == [BATCHES]
    journal = JournalSummary(run_dir)
    tensorboard = next(tracker for tracker in again.trackers if tracker.name == "tensorboard")
    for points in (journal.metrics["train_loss"], tensorboard.read_back_history()["train_loss"]):
        assert [step for step, _ in points] == list(range(3 * BATCHES)), points
        assert [value > 100 for _, value in points] == [step >= BATCHES for step in range(3 * BATCHES)], points


def test_a_checkpoint_given_to_test_alone_neither_reopens_nor_rewinds_a_run(tmp_path):
    """Only ``fit`` continues the checkpoint's run: ``Trainer.test(ckpt_path=...)`` with a new logger starts
    a run of its own, and the training run keeps every step."""
    import lightning.pytorch as pl

    runs = tmp_path / "runs"
    first = TrackingLogger(log_with="jsonl", project="rewind", logging_dir=runs)
    trainer = _fit(tmp_path, first, epochs=2)
    older = Path(first.log_dir) / "checkpoints" / f"epoch=0-step={BATCHES}.ckpt"
    tester = TrackingLogger(log_with="jsonl", project="rewind", logging_dir=runs)
    model = type(trainer.lightning_module)()
    model.test_step = lambda batch, *rest: model.log("test_loss", 1.0)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(8, 4), torch.zeros(8, 1)), 8)
    pl.Trainer(accelerator="cpu", logger=tester, enable_progress_bar=False, enable_model_summary=False).test(
        model, data, ckpt_path=older
    )
    assert tester.version != first.version
    run_dir = runs / "rewind" / first.version
    assert "rewinds" not in json.loads((run_dir / "run.json").read_text())
    assert [step for step, _ in JournalSummary(run_dir).metrics["train_loss"]] == list(range(2 * BATCHES))
