"""Run context on the cell's backend: the system samples and what reproduces the run, where the backend keeps them.

The run starts in a git checkout with an uncommitted change. With the defaults, the backend holds only
what the test logged, and the run folder keeps the samples and the context. When the run asks
(``system_metrics=0.05, context=True``), the backend's reader finds the commit the checkout is at in
the place docs/run-context.md names, every sample is reported stored on its own line, and the user's
series are still exactly what was logged. Each backend's own tests read its samples back from the SDK's
place for system metrics.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import tracking_core

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one")
    _git(repo, "remote", "add", "origin", "https://user:secret-pw@example.com/org/proj.git")
    (repo / "train.py").write_text("print('training')\n")
    _git(repo, "add", "train.py")  # staged, not committed: the checkout is dirty
    monkeypatch.chdir(repo)
    monkeypatch.setattr(sys, "argv", [str(repo / "train.py"), "--lr", "0.1"])
    return repo


# -- per backend: where the reproducibility fields are, read with the SDK's own reader --------------
def manifest_context(run: Any) -> dict[str, Any]:
    context: dict[str, Any] = json.loads((Path(run.run_dir) / "run.json").read_text())["context"]
    return context


def _tensorboard(run: Any, tracker: Any) -> dict[str, str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tracker.log_dir), size_guidance={"tensors": 0})
    events.Reload()
    text = events.Tensors("run_context")[0].tensor_proto.string_val[0].decode()
    whole = json.loads(text.split("```json\n", 1)[1].rsplit("\n```", 1)[0])
    assert "| git.commit |" in text
    return {"commit": whole["git"]["commit"], "remote": whole["git"]["remote_url"]}


def _mlflow(run: Any, tracker: Any) -> dict[str, str]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracker.tracking_uri)
    run_id = tracker.active_run_id
    tags = client.get_run(run_id).data.tags
    stored = {item.path for item in client.list_artifacts(run_id, "run_context")}
    assert {"run_context/diff.patch", "run_context/packages.txt", "run_context/context.json"} <= stored
    assert tags["mlflow.source.git.branch"] == "main"
    return {"commit": tags["mlflow.source.git.commit"], "remote": tags["mlflow.source.git.repoURL"]}


def _aim(run: Any, tracker: Any) -> dict[str, str]:
    from aim import Repo

    stored = Repo(tracker.repo_path).get_run(tracker.run_hash)  # indexed by read_back_metrics() before
    git = stored["__system_params"]["git_info"]
    assert "pytest" in stored["__system_params"]["packages"]
    return {"commit": git["commit"]["hash"], "remote": git["remote_origin_url"]}


def _from_config(config: dict[str, Any]) -> dict[str, str]:
    """The context where the default ``log_run_context`` puts it: config under ``run_context``, nested or flat."""
    if "run_context" in config:
        git = config["run_context"]["git"]
        return {"commit": git["commit"], "remote": git["remote_url"]}
    return {"commit": config["run_context/git/commit"], "remote": config["run_context/git/remote_url"]}


def _wandb(run: Any, tracker: Any) -> dict[str, str]:
    from tracking_wandb.reader import read_run
    from tracking_wandb.run_metadata import read_metadata

    metadata = read_metadata(tracker.run_dir)  # W&B's own message: the run's metadata as `wandb sync` uploads it
    assert metadata is not None and metadata.git.commit, "no git commit in W&B's run metadata"
    assert metadata.host == manifest_context(run)["platform"]["host"]
    assert (Path(tracker.run_dir) / "files" / "diff.patch").is_file()
    assert _from_config(read_run(tracker.run_dir).user_config())["commit"] == metadata.git.commit  # config kept
    return {"commit": metadata.git.commit, "remote": metadata.git.remote_url}


def _comet_ml(run: Any, tracker: Any) -> dict[str, str]:
    from comet_ml.messages import GitMetadataMessage
    from comet_ml.schemas import get_git_metadata_msg_validator
    from tracking_comet_ml.reader import read_archive_messages

    # Comet's own git capture (on by default) sends its message at start; the context's, sent after it,
    # is the one the experiment keeps: the last
    messages = read_archive_messages(tracker.archive_path, "git_metadata")
    assert 1 <= len(messages) <= 2, messages
    payload = messages[-1]
    get_git_metadata_msg_validator().validate(payload)  # what `comet upload` checks before sending it
    git = GitMetadataMessage.from_db_message_dict(payload).git_metadata
    assert git["branch"] == "refs/heads/main"
    return {"commit": git["parent"], "remote": git["origin"]}


def _trackio(run: Any, tracker: Any) -> dict[str, str]:
    import sqlite3

    from trackio.sqlite_storage import SQLiteStorage

    database = Path(run.logging_dir) / "trackio" / SQLiteStorage.get_project_db_filename(run.project_name)
    with sqlite3.connect(database) as connection:
        (config,) = connection.execute("SELECT config FROM configs").fetchall()
    return _from_config(json.loads(config[0]))


def _swanlab(run: Any, tracker: Any) -> dict[str, str]:
    from tracking_swanlab.reader import read_run

    return _from_config(read_run(tracker.run_dir).config)


def _clearml(run: Any, tracker: Any) -> dict[str, str]:
    from tracking_clearml.reader import OfflineSession

    session = OfflineSession(f"{tracker.offline_folder}.zip")
    script = session.task["script"]
    context = session.configuration("Run context")
    assert script["branch"] == "main" and script["entry_point"] == context["command"]["entry_point"]
    assert "+print('training')" in script["diff"]
    assert context["git"]["commit"] == script["version_num"]
    return {"commit": script["version_num"], "remote": script["repository"]}


def _dvclive(run: Any, tracker: Any) -> dict[str, str]:
    from ruamel.yaml import YAML  # what DVCLive writes params.yaml with

    return _from_config(YAML(typ="safe").load((Path(tracker.dir) / "params.yaml").read_text(encoding="utf-8")))


#: where each backend's reader finds the context (a backend without an override stores it as config)
READERS = {
    "tensorboard": _tensorboard,
    "mlflow": _mlflow,
    "aim": _aim,
    "wandb": _wandb,
    "comet_ml": _comet_ml,
    "trackio": _trackio,  # as config
    "dvclive": _dvclive,  # as params
    "swanlab": _swanlab,  # as config
    "clearml": _clearml,
}


def test_with_the_defaults_the_backend_holds_only_what_was_logged(checkout, tmp_path):
    run = tracking_core.init("context", log_with=[CELL], logging_dir=tmp_path / "logs", config={"lr": 0.1})
    for step in range(3):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    backend = report.backends[CELL]
    assert backend.delivered == 4 and (backend.samples, backend.context_delivered) == (0, None)
    tracker = run.get_tracker(CELL)
    series = tracker.read_back_metrics()
    assert not [key for key in series if "system" in key], sorted(series)
    assert sorted(series[tracker.sanitize_key("loss")]) == [0, 1, 2]
    assert manifest_context(run)["git"]["dirty"] is True  # kept in the run folder
    assert (Path(run.run_dir) / "system.jsonl").read_text()


def test_asked_for_samples_and_run_context_reach_the_backends_own_place(checkout, tmp_path):
    run = tracking_core.init(
        "context", log_with=[CELL], logging_dir=tmp_path / "logs", system_metrics=0.05, context=True
    )
    for step in range(5):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
        time.sleep(0.05)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    tracker = run.get_tracker(CELL)
    series = tracker.read_back_metrics()
    assert sorted(series[tracker.sanitize_key("loss")]) == [0, 1, 2, 3, 4]
    backend = report.backends[CELL]
    assert backend.delivered == 5, str(report)  # the samples and the context are not the user's records
    kept = (Path(run.run_dir) / "system.jsonl").read_text().splitlines()
    if CELL == "jsonl":  # the journal is the user's records: it takes neither
        assert (backend.samples, backend.context_delivered) == (0, None)
        assert manifest_context(run)["git"]["dirty"] is True
        return
    assert backend.samples == len(kept) >= 3 and backend.samples_missed == 0, str(report)
    assert backend.context_delivered is True, str(report)
    stored = READERS[CELL](run, tracker)
    assert stored["commit"] == _git(checkout, "rev-parse", "HEAD")
    assert stored["remote"] == "https://example.com/org/proj.git"  # the credentials never left the machine
    try:
        samples = tracker.read_back_system_metrics()  # from the SDK's place for system metrics
    except NotImplementedError:
        return
    name = "system/memory.rss_gb"
    taken = [json.loads(line) for line in kept]
    assert [index for index, _value in samples.get(name, [])] == list(range(len(kept))), sorted(samples)
    assert [value for _index, value in samples[name]] == pytest.approx([line["values"][name] for line in taken])
