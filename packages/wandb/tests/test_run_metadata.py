"""The run context in W&B's run metadata (git, program, arguments, host, ...), read back as ``wandb sync``
uploads it -- W&B's own proto messages from the offline run folder -- at whichever W&B is installed.

One run per delivery mode and a replay of the first run's journal (the jsonl backend writes it) from
another folder and command line: all three must hold the first run's context, and the config must still have it under ``run_context``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tracking_core
from tracking_core.cli.replay import replay
from tracking_wandb import WandBTracker, run_metadata
from tracking_wandb.reader import read_run

#: W&B's own metadata is off and this backend's record is all of it (wandb >= 0.21)
REPLACES = run_metadata.generation() == run_metadata.ENVIRONMENT


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for variable in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_PROJECT", "WANDB_X_DISABLE_META"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one")
    _git(repo, "remote", "add", "origin", "https://user:secret-pw@example.com/org/proj.git")
    (repo / "train.py").write_text("print('training')\n")
    _git(repo, "add", "train.py")  # staged: the checkout is dirty, so there is a diff
    monkeypatch.chdir(repo)
    monkeypatch.setattr(sys, "argv", [str(repo / "train.py"), "--lr", "0.1", "--api-key", "not-for-wandb"])
    return repo


def _one_run(folder: Path) -> Path:
    (found,) = folder.glob("wandb/offline-run-*")
    return found


def _train(logging_dir: Path, delivery: str, **wandb_kwargs) -> tracking_core.Dispatcher:
    run = tracking_core.init(
        "ctx",
        log_with=["jsonl", "wandb"],
        init_kwargs={"wandb": wandb_kwargs},
        logging_dir=logging_dir,
        delivery=delivery,
        system_metrics=False,
        context=True,  # the test session turns it off by default (tracking_core.testing.pytest_plugin)
        on_error="raise",
    )
    run.log({"loss": 0.5}, step=0)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    return run


def test_the_context_is_the_runs_metadata_in_both_delivery_modes_and_in_a_replay(checkout, tmp_path, monkeypatch):
    # W&B's own metadata (on by default, the arguments as W&B records them) turned off: the context's is all of it.
    # The replay keeps W&B's own, with the context merged in.
    own_off = {"settings": {"x_disable_meta": True}} if REPLACES else {}  # before 0.21 the context merges into it
    first = _train(tmp_path / "thread", "thread", **own_off)
    _train(tmp_path / "process", "process", **own_off)
    monkeypatch.chdir(tmp_path)  # the replay runs elsewhere, with another command line
    monkeypatch.setattr(sys, "argv", ["tracking", "replay"])
    assert replay(first.run_dir, to="wandb", logging_dir=tmp_path / "replay", progress=False).ok
    commit = _git(checkout, "rev-parse", "HEAD")
    context = json.loads((Path(first.run_dir) / "run.json").read_text())["context"]
    expected = run_metadata.metadata_fields(context)
    assert expected["root"] == str(checkout) and expected["host"]
    stored = {}
    for name in ("thread", "process", "replay"):
        folder = _one_run(tmp_path / name)
        metadata = run_metadata.read_metadata(folder)
        assert metadata is not None, name
        assert (metadata.git.commit, metadata.git.remote_url) == (commit, "https://example.com/org/proj.git"), name
        assert (folder / "files" / "diff.patch").read_text().count("+print('training')") == 1, name
        assert read_run(folder).user_config()["run_context"]["git"]["commit"] == commit, name  # the config keeps it
        if REPLACES and name != "replay":  # the redacted command line of the training process, in both modes
            assert list(metadata.args) == ["--lr", "0.1", "--api-key", "<redacted>"], name
        else:  # W&B's own arguments (of the process it runs in), never listed twice
            assert list(metadata.args).count("--lr") <= 1, f"{name}: {list(metadata.args)}"
        stored[name] = {field: getattr(metadata, field) for field in ("program", "root", "host", "python", "os")}
    assert stored["thread"] == {field: expected[field] for field in stored["thread"]}
    assert stored["thread"] == stored["process"] == stored["replay"]


def test_an_sdk_without_the_metadata_message_costs_one_warning_and_keeps_the_config(
    checkout, tmp_path, monkeypatch, recwarn
):
    monkeypatch.setattr(run_metadata, "generation", lambda: None)
    tracker = WandBTracker("ctx", logging_dir=tmp_path / "logs")
    tracker.start()
    context = {"format": "tracking-run-context", "git": {"commit": "0" * 40, "remote_url": "https://example.com/r"}}
    tracker.log_run_context(context)
    tracker.log_run_context(context)  # once per run: no second warning
    tracker.finish()
    assert read_run(tracker.run_dir).user_config()["run_context"] == context
    notes = [note for note in tracker.report_notes() if "not in W&B's run metadata" in note]
    assert len(notes) == 1 and "run_context" in notes[0]
    assert len([w for w in recwarn if "not in W&B's run metadata" in str(w.message)]) == 1


def test_w_and_bs_own_metadata_when_chosen_gets_the_context_merged_in_without_a_second_argument_list(
    checkout, tmp_path
):
    tracker = WandBTracker("ctx", logging_dir=tmp_path / "logs", settings={"x_disable_meta": False})
    tracker.start()
    context = {
        "format": "tracking-run-context",
        "git": {"commit": "1" * 40, "remote_url": "https://example.com/r.git"},
        "command": {"argv": ["train.py", "--lr", "<redacted>"]},
    }
    tracker.log_run_context(context)
    tracker.finish()
    metadata = run_metadata.read_metadata(tracker.run_dir)
    assert (metadata.git.commit, metadata.git.remote_url) == ("1" * 40, "https://example.com/r.git")
    assert list(metadata.args) == sys.argv[1:]  # W&B's own, once
