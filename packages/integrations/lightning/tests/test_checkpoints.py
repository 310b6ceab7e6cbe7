"""``log_model``: ``ModelCheckpoint``'s checkpoints reach the backends that store artifacts.

A small regressor trains three epochs with a ``ModelCheckpoint`` watching ``val_loss``; what the
jsonl journal and MLflow hold is read back (MLflow's own client downloads the files) and each
checkpoint is loaded with ``torch.load``: its ``global_step`` is the step in its artifact folder
and in its ``checkpoint.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from tracking_lightning import TrackingLogger

EPOCHS = 3


def _fit(tmp_path, log_model, save_top_k):
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

        def validation_step(self, batch, batch_index):
            inputs, targets = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.layer(inputs), targets))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    def loader(seed):
        inputs = torch.randn(16, 4, generator=torch.Generator().manual_seed(seed))
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, inputs.sum(1, keepdim=True)), 8)

    torch.manual_seed(0)
    logger = TrackingLogger(
        log_with=["mlflow", "jsonl"], project="ckpt", logging_dir=tmp_path / "runs", log_model=log_model
    )
    checkpoint = pl.callbacks.ModelCheckpoint(monitor="val_loss", save_top_k=save_top_k)
    trainer = pl.Trainer(
        max_epochs=EPOCHS,
        accelerator="cpu",
        logger=logger,
        callbacks=[checkpoint],
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(Regressor(), loader(1), loader(2))
    assert logger.report.ok, str(logger.report)
    return logger, checkpoint


def _from_mlflow(tracker, tmp_path) -> dict[str, dict]:
    """Folder under checkpoints/ -> {"checkpoint": loaded .ckpt, "meta": checkpoint.json}, via MlflowClient."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracker.tracking_uri)
    found = {}
    for folder in client.list_artifacts(tracker.active_run_id, "checkpoints"):
        local = Path(client.download_artifacts(tracker.active_run_id, folder.path, str(tmp_path / "download")))
        (ckpt,) = local.glob("*.ckpt")
        found[Path(folder.path).name] = {
            "checkpoint": torch.load(ckpt, weights_only=False),
            "meta": json.loads((local / "checkpoint.json").read_text()),
        }
    return found


def _from_journal(tracker) -> dict[str, list[str]]:
    from tracking_core.store.journal import read_journal

    found: dict[str, list[str]] = {}
    for entry in read_journal(tracker.journal_path):
        if entry["type"] == "artifact":
            assert os.path.isfile(entry["local_path"]), entry  # the journal's reference still holds the file
            found.setdefault(Path(entry["artifact_path"]).name, []).append(os.path.basename(entry["local_path"]))
    return found


def _trackers(logger):
    return {tracker.name: tracker for tracker in logger.trackers}


def test_log_model_all_logs_every_checkpoint_as_it_is_saved(tmp_path):
    logger, checkpoint = _fit(tmp_path, "all", save_top_k=-1)
    trackers = _trackers(logger)
    stored = _from_mlflow(trackers["mlflow"], tmp_path)
    assert len(stored) == EPOCHS, sorted(stored)  # one checkpoint per epoch, none twice
    for folder, item in stored.items():
        step = item["checkpoint"]["global_step"]
        assert folder.startswith(f"step-{step}-") and item["meta"]["step"] == step, (folder, item["meta"])
        assert item["meta"]["monitor"] == "val_loss" and isinstance(item["meta"]["score"], float)
    best = [
        item for item in stored.values() if item["meta"]["original_filename"] == Path(checkpoint.best_model_path).name
    ]
    assert best and best[0]["meta"]["score"] == pytest.approx(float(checkpoint.best_model_score))
    journal = _from_journal(trackers["jsonl"])
    assert sorted(journal) == sorted(stored)
    assert all(
        sorted(files) == sorted([item["meta"]["original_filename"], "checkpoint.json"])
        for folder, files in journal.items()
        for item in [stored[folder]]
    )


def test_log_model_true_logs_the_best_checkpoint_at_the_end(tmp_path):
    logger, checkpoint = _fit(tmp_path, True, save_top_k=1)
    stored = _from_mlflow(_trackers(logger)["mlflow"], tmp_path)
    (item,) = stored.values()  # earlier bests were deleted by ModelCheckpoint and never logged
    assert item["meta"]["original_filename"] == Path(checkpoint.best_model_path).name
    assert item["meta"]["tag"] == "best"
    assert item["meta"]["score"] == pytest.approx(float(checkpoint.best_model_score))
    assert item["checkpoint"]["global_step"] == item["meta"]["step"]
    assert sorted(_from_journal(_trackers(logger)["jsonl"])) == sorted(stored)


def test_log_model_takes_false_true_or_all():
    with pytest.raises(ValueError, match="log_model"):
        TrackingLogger(log_model="best")
