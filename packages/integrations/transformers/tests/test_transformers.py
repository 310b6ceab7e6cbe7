"""transformers' ``Trainer`` on a tiny model with ``callbacks=[TrackingCallback(...)]`` as the only addition.

A one-layer BERT classifier (built from a config: nothing is downloaded) trains for a few steps on
random tokens on CPU, evaluating as it goes; what every backend stored is then read back with the
SDK's own reader.
"""

from __future__ import annotations

import pytest
import torch
from tracking_transformers import TrackingCallback, trainer_keys
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

MAX_STEPS = 6
EVAL_EVERY = 3


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, size: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.input_ids = torch.randint(0, 50, (size, 8), generator=generator)
        self.labels = torch.randint(0, 2, (size,), generator=generator)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.input_ids[index], "labels": self.labels[index]}


def tiny_model() -> BertForSequenceClassification:
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=2,
    )
    return BertForSequenceClassification(config)


def trainer_with(callback: TrackingCallback, output_dir, **arguments) -> Trainer:
    arguments = {"save_strategy": "no", **arguments}
    args = TrainingArguments(
        output_dir=str(output_dir),
        max_steps=MAX_STEPS,
        per_device_train_batch_size=4,
        per_device_eval_batch_size=8,
        learning_rate=5e-3,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=EVAL_EVERY,
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        hub_token="hf_abcdefghijklmnopqrstuvwx",
        **arguments,
    )
    return Trainer(
        model=tiny_model(),
        args=args,
        train_dataset=RandomTokens(24, seed=1),
        eval_dataset=RandomTokens(8, seed=2),
        callbacks=[callback],
    )


def test_trainer_logs_reach_every_backend_and_read_back(tmp_path, read_back_of):
    callback = TrackingCallback(log_with=["tensorboard", "mlflow", "jsonl"], project="bert-tiny")
    trainer = trainer_with(callback, tmp_path / "out")
    trainer.train()
    report = callback.report
    assert report is not None and report.ok, str(report)
    assert callback.run is None  # finished at train end
    trackers = {tracker.name: tracker for tracker in callback.trackers}
    assert sorted(trackers) == ["jsonl", "mlflow", "tensorboard"]

    history = trainer.state.log_history
    train_losses = [entry["loss"] for entry in history if "loss" in entry]
    eval_losses = [entry["eval_loss"] for entry in history if "eval_loss" in entry]
    for name, tracker in trackers.items():
        stored = read_back_of(tracker)
        assert stored.steps("train/loss") == list(range(1, MAX_STEPS + 1)), name
        assert stored.values("train/loss") == pytest.approx(train_losses, rel=1e-5), name
        assert stored.steps("train/learning_rate") == list(range(1, MAX_STEPS + 1)), name
        assert stored.steps("eval/loss") == [EVAL_EVERY, 2 * EVAL_EVERY], name
        assert stored.values("eval/loss") == pytest.approx(eval_losses, rel=1e-5), name
        assert stored.steps("train/train_runtime") == [MAX_STEPS], name  # the end-of-training summary
        config = stored.config
        # numbers read back as numbers (TensorBoard: float) or as MLflow's strings
        assert float(config["learning_rate"]) == 0.005 and float(config["max_steps"]) == MAX_STEPS, name
        assert float(config["hidden_size"]) == 16 and config["model_type"] == "bert", name  # the model's config
        assert "hf_abcdefghijklmnopqrstuvwx" not in repr(config), name  # the token never reaches a backend
    assert trackers["tensorboard"].log_dir.is_relative_to(tmp_path / "out" / "runs" / "bert-tiny")


def test_evaluate_after_training_goes_to_the_same_run(tmp_path, read_back_of):
    callback = TrackingCallback(log_with=["mlflow", "jsonl"], project="bert-tiny")
    trainer = trainer_with(callback, tmp_path / "out")
    trainer.train()
    run_id = callback.run_id
    metrics = trainer.evaluate()
    assert callback.run is not None and callback.run_id == run_id  # reopened, not a new run
    report = callback.finish()
    assert report.ok, str(report)
    for tracker in callback.trackers:
        stored = read_back_of(tracker)
        assert stored.steps("eval/loss") == [EVAL_EVERY, 2 * EVAL_EVERY, MAX_STEPS], tracker.name
        assert stored.values("eval/loss")[-1] == pytest.approx(metrics["eval_loss"], rel=1e-5)
        assert stored.steps("train/loss") == list(range(1, MAX_STEPS + 1)), tracker.name  # the training's points


def test_checkpoints_are_stored_when_asked(tmp_path):
    from mlflow import MlflowClient

    callback = TrackingCallback(log_with="mlflow", project="bert-tiny", log_checkpoints=True)
    trainer = trainer_with(callback, tmp_path / "out", save_strategy="steps", save_steps=MAX_STEPS)
    trainer.train()
    assert callback.report.ok, str(callback.report)
    (mlflow_tracker,) = callback.trackers
    client = MlflowClient(tracking_uri=mlflow_tracker.tracking_uri)
    stored = [info.path for info in client.list_artifacts(mlflow_tracker.active_run_id, f"checkpoint-{MAX_STEPS}")]
    assert f"checkpoint-{MAX_STEPS}/model.safetensors" in stored, stored


def test_checkpoints_are_not_stored_by_default(tmp_path):
    from mlflow import MlflowClient

    callback = TrackingCallback(log_with="mlflow", project="bert-tiny")
    trainer = trainer_with(callback, tmp_path / "out", save_strategy="steps", save_steps=MAX_STEPS)
    trainer.train()
    (mlflow_tracker,) = callback.trackers
    client = MlflowClient(tracking_uri=mlflow_tracker.tracking_uri)
    assert not [info.path for info in client.list_artifacts(mlflow_tracker.active_run_id) if "checkpoint" in info.path]


def test_token_ids_and_counts_are_not_taken_for_secrets(tmp_path):
    from tracking_core import sanitize_config

    callback = TrackingCallback(log_with="jsonl")
    trainer = trainer_with(callback, tmp_path / "out")
    config = sanitize_config(callback.run_config(trainer.args, trainer.model))
    assert config["hub_token"] == "<redacted>"  # a secret: redacted
    assert config["pad_token_id"] == trainer.model.config.pad_token_id  # a token id: a number to keep


def test_trainer_key_names_follow_transformers():
    logs = {"loss": 1.0, "eval_loss": 0.5, "test_f1": 0.9, "epoch": 1.0, "learning_rate": 1e-3}
    assert trainer_keys(logs) == {
        "train/loss": 1.0,
        "eval/loss": 0.5,
        "test/f1": 0.9,
        "train/epoch": 1.0,
        "train/learning_rate": 1e-3,
    }
    from transformers.integrations.integration_utils import rewrite_logs

    assert trainer_keys(logs) == rewrite_logs(logs)  # the same names as transformers' own callbacks


def test_importing_the_package_does_not_import_transformers():
    import subprocess
    import sys

    code = "import sys, tracking_transformers; print('transformers' in sys.modules, 'torch' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]


def test_documentation_examples_run(tmp_path, run_docs_page):
    run_docs_page("integrations/transformers.md", tmp_path)  # the core cell leaves this page to this one
