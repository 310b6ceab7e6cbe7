"""The run context in Comet's own panels, read from the offline archive's messages with Comet's own
message classes and the schemas ``comet upload`` checks them against, at whichever Comet is installed.

One run per delivery mode and a replay of the first run's journal (the jsonl backend writes it) from
another folder and command line: all three must hold the first run's context (git metadata, system information, file name, packages).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tracking_core
from tracking_comet_ml import CometMLTracker, context_panels
from tracking_comet_ml.reader import read_archive_messages
from tracking_core.cli.replay import replay


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one")
    _git(repo, "remote", "add", "origin", "https://user:secret-pw@example.com/org/proj.git")
    (repo / "train.py").write_text("print('training')\n")
    _git(repo, "add", "train.py")  # staged: the checkout is dirty, so there is a diff
    monkeypatch.chdir(repo)
    monkeypatch.setattr(sys, "argv", [str(repo / "train.py"), "--lr", "0.1", "--api-key", "not-for-comet"])
    return repo


def _train(logging_dir: Path, delivery: str) -> tracking_core.Dispatcher:
    run = tracking_core.init(
        "ctx",
        log_with=["jsonl", "comet_ml"],
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


def _panels(archive: Path) -> dict[str, object]:
    """What Comet's panels get from the archive, parsed and validated as ``comet upload`` does.

    Comet's own capture (on, as Comet defaults it) sends its git metadata and file name at start; the
    context's, sent after it, is the last of each: the one the experiment keeps.
    """
    from comet_ml import messages, schemas

    *_, git = read_archive_messages(archive, "git_metadata")
    schemas.get_git_metadata_msg_validator().validate(git)
    *_, name = read_archive_messages(archive, "file_name")
    schemas.get_file_name_msg_validator().validate(name)
    info = read_archive_messages(archive, "system_info")
    for payload in info:
        schemas.get_system_info_msg_validator().validate(payload)
    packages = read_archive_messages(archive, "log_dependency")
    for payload in packages:
        schemas.get_log_dependency_msg_validator().validate(payload)
    uploads = read_archive_messages(archive, "file_upload")
    assets = {upload["additional_params"]["fileName"] for upload in uploads if upload["upload_type"] == "asset"}
    return {
        "git": messages.GitMetadataMessage.from_db_message_dict(git).git_metadata,
        "file_name": name["file_name"],
        "info": {item["system_info"]["key"]: item["system_info"]["value"] for item in info},
        "packages": {(item["name"], item["version"]) for item in packages},
        "assets": assets & {"run_context/diff.patch", "run_context/packages.txt", "run_context/context.json"},
    }


def test_the_context_is_in_comets_panels_in_both_delivery_modes_and_in_a_replay(checkout, tmp_path, monkeypatch):
    first = _train(tmp_path / "thread", "thread")
    _train(tmp_path / "process", "process")
    monkeypatch.chdir(tmp_path)  # the replay runs elsewhere, with another command line
    monkeypatch.setattr(sys, "argv", ["tracking", "replay"])
    assert replay(first.run_dir, to="comet_ml", logging_dir=tmp_path / "replay", progress=False).ok
    context = json.loads((Path(first.run_dir) / "run.json").read_text())["context"]
    commit = _git(checkout, "rev-parse", "HEAD")
    found = {}
    for name in ("thread", "process", "replay"):
        (archive,) = (tmp_path / name).glob("ctx/*/comet_ml/*.zip")
        found[name] = panels = _panels(archive)
        git = panels["git"]
        assert (git["parent"], git["origin"], git["branch"]) == (
            commit,
            "https://example.com/org/proj.git",
            "refs/heads/main",
        ), name
        assert panels["info"]["command"].endswith("train.py --lr 0.1 --api-key '<redacted>'"), name
        assert panels["info"]["host"] == context["platform"]["host"], name
        assert ("pytest", pytest.__version__) in panels["packages"], name
        assert panels["file_name"] == context["command"]["entry_point"], name
        assert len(panels["assets"]) == 3, name
    assert found["thread"] == found["process"] == found["replay"]
    assert "not-for-comet" not in json.dumps(found, default=sorted)


def test_a_comet_without_the_git_message_costs_one_warning_and_keeps_the_parameters(
    checkout, tmp_path, monkeypatch, recwarn
):
    def missing(experiment, metadata):
        raise ImportError("cannot import name 'GitMetadataMessage'")

    monkeypatch.setattr(context_panels, "send_git_metadata", missing)
    tracker = CometMLTracker("ctx", logging_dir=tmp_path / "logs", log_git_metadata=False)  # Comet's own: off
    tracker.start()
    context = {"format": "tracking-run-context", "git": {"commit": "0" * 40, "branch": "main"}}
    tracker.log_run_context(context)
    tracker.log_run_context(context)  # once per experiment: no second warning
    tracker.finish()
    assert not read_archive_messages(tracker.archive_path, "git_metadata")
    parameters = {p["param"]["paramName"] for p in read_archive_messages(tracker.archive_path, "parameter_msg")}
    assert "run_context|git|commit" in parameters
    notes = [note for note in tracker.report_notes() if "git metadata" in note]
    assert len(notes) == 1 and "run_context" in notes[0]
    assert len([w for w in recwarn if "Comet's git metadata" in str(w.message)]) == 1
