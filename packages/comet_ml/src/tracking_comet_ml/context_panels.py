"""The run context in Comet's own panels: the git metadata, system information, file name and packages.

Comet's own capture of all of these stays off (:data:`~tracking_comet_ml.startup.QUIET_DEFAULTS`): it
reads the repository through dulwich, walking its whole history for the root commit, and records
the command line as it is, secrets included. The context ``tracking_core``
captured goes there instead, the same in every delivery mode and in a replay:

* **Git** (the experiment's *Code* / reproduce panel) -- Comet's ``git_metadata`` message, the one its
  own capture sends (``branch`` as Comet names it, ``refs/heads/<branch>``; ``parent`` the commit;
  ``origin`` the remote without credentials). Comet has no public call that writes it to an offline
  archive, so the message is built with its message class and queued as Comet queues its own, both
  feature-detected: a release without them costs one warning, and the context stays in the parameters.
  ``user`` and ``root`` stay empty: the context records no personal names, and Comet's root is the
  repository's first commit, which only a walk of the whole history finds.
* **System information** -- ``log_system_info`` for the command line (redacted), entry point, Python,
  platform, host, CPU, GPUs, torch and CUDA, and the launcher variables.
* **File name** -- ``set_filename`` with the entry point.
* **Installed packages** -- ``log_dependency`` for each package of the context's list.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tracking_core import GeneralTracker
from tracking_core.kit import context_files, context_summary, warn_once

#: Seconds the run context waits for Comet's own start-up capture (git, conda) before it replaces it.
OWN_CAPTURE_WAIT = 30.0


def git_metadata(context: dict[str, Any]) -> dict[str, Any] | None:
    """The ``git_metadata`` message's fields, as Comet's own capture fills them (``None`` outside a checkout)."""
    git = context.get("git") or {}
    if not git.get("commit"):
        return None
    origin = git.get("remote_url")
    name = urlparse(origin).path.rstrip("/").rsplit("/", 1)[-1] if origin else None
    return {
        "user": None,
        "root": None,
        "branch": f"refs/heads/{git['branch']}" if git.get("branch") else None,
        "parent": git["commit"],
        "status": None,
        "origin": origin,
        "repo_name": name.removesuffix(".git") if name else None,
    }


def send_git_metadata(experiment: Any, metadata: dict[str, Any]) -> None:
    """Queue Comet's ``git_metadata`` message; raises when this Comet release has no such message or queue."""
    from comet_ml.messages import GitMetadataMessage

    message = GitMetadataMessage.create(context=experiment.context, git_metadata=metadata)
    experiment._enqueue_message(message)


def system_info(context: dict[str, Any]) -> dict[str, str]:
    """What goes to Comet's system information: the context's main fields but git (that has its own panel)."""
    return {key: value for key, value in context_summary(context).items() if not key.startswith("git.")}


def installed_packages(context: dict[str, Any]) -> list[tuple[str, str]]:
    """``(name, version)`` of every line of the context's package list (none when it was not captured)."""
    path = context.get("packages")
    if not path:
        return []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [(name, version) for name, _, version in (line.partition("==") for line in lines) if name and version]


def send_context(
    tracker: GeneralTracker,
    experiment: Any,
    context: dict[str, Any],
    run_dir: Path | None,
    check: Callable[[Any, str], None],
) -> None:
    """The context in Comet's panels and its files as assets under ``run_context/`` (``check`` turns Comet's
    refusal of an asset into an exception); a panel this Comet release cannot fill costs a warning."""
    # Comet's own git capture (on by default) sends its message from a thread of its own at start: the
    # context's, redacted, must come after it to be the one the experiment keeps.
    own_capture = getattr(experiment, "initial_data_logger_thread", None)
    if own_capture is not None:
        own_capture.join(OWN_CAPTURE_WAIT)
    metadata = git_metadata(context)
    if metadata is not None:
        _into_panel(tracker, "git metadata", lambda: send_git_metadata(experiment, metadata))
    entry = (context.get("command") or {}).get("entry_point")

    def send_system_information() -> None:
        for key, value in system_info(context).items():
            experiment.log_system_info(key, value)
        if entry and not entry.startswith("<"):
            experiment.set_filename(entry)

    def send_installed_packages() -> None:
        for name, version in installed_packages(context):
            experiment.log_dependency(name, version)

    _into_panel(tracker, "system information", send_system_information)
    _into_panel(tracker, "installed packages", send_installed_packages)
    for path in context_files(context, run_dir):
        check(experiment.log_asset(os.fspath(path), file_name=f"run_context/{path.name}"), path.name)


def _into_panel(tracker: GeneralTracker, panel: str, send: Callable[[], None]) -> None:
    """One of Comet's panels; a Comet release that lacks the call costs one warning and a report note."""
    try:
        send()
    except Exception as error:
        message = (
            f"the run context is not in Comet's {panel} ({type(error).__name__}: {error}); "
            "it is in the parameters (run_context)"
        )
        tracker.add_note(message)
        warn_once(tracker.name, f"run-context:{panel}", message, reason="sdk-version")
