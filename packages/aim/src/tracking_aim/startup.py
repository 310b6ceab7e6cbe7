"""Opening the run's Aim repo and run: the repo's location, its creation by the first of several ranks, the
earlier process's run on resume, and the run's name and tags."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracking_core.kit import file_lock, notice, per_rank, rank_name, rank_tags

from .repo_cache import seed_repo, unseed
from .sdk import Sdk

if TYPE_CHECKING:
    from .tracker import AimTracker


def repo_location(tracker: AimTracker) -> str:
    """Where the Aim repo lives: the ``repo`` kwarg if given, else the ``aim://`` server of the run this
    one resumes (a replay of its spill), else ``logging_dir``."""
    repo = tracker.run_kwargs.get("repo")
    if repo is None:
        resume = tracker.run_context.resume if tracker.run_context is not None else None
        earlier = resume.get("repo") if resume and "run_hash" not in tracker.run_kwargs else None
        if isinstance(earlier, str) and "://" in earlier:
            return earlier
        return str(tracker.logging_dir.absolute())
    return str(getattr(repo, "root_path", repo))


def open_run(tracker: AimTracker, sdk: Sdk, kwargs: dict[str, Any]) -> Any:
    """The ``aim.Run`` of ``kwargs``: the earlier process's when resuming, in a local repo created once."""
    repo = kwargs["repo"]
    if not (isinstance(repo, str) and "://" not in repo):
        return resumed_run(tracker, sdk, kwargs) or sdk.Run(**kwargs)
    # Ranks of a per-rank job start together: the first creates the repo, the others wait for it
    # (a half-created repo reads as "out of date" and fails the Run).
    with file_lock(Path(repo, ".tracking-aim.lock")):
        seeded = seed_repo(Path(repo))
        try:
            return resumed_run(tracker, sdk, kwargs) or sdk.Run(**kwargs)
        except Exception:
            if not seeded:
                raise
            unseed(Path(repo))  # Aim refused the copy: let it make the repo itself
            return resumed_run(tracker, sdk, kwargs) or sdk.Run(**kwargs)


def resumed_run(tracker: AimTracker, sdk: Sdk, kwargs: dict[str, Any]) -> Any:
    """The earlier process's Aim run when the tracking run is resumed (an explicit ``run_hash`` wins).

    Aim reopens a run whose process was killed on its own; a run it cannot reopen (deleted, or
    still written by a live process) leaves a note and a new run.
    """
    resume = tracker.run_context.resume if tracker.run_context is not None else None
    if not resume or "run_hash" in tracker.run_kwargs:
        return None
    try:
        return sdk.Run(**{**kwargs, "run_hash": resume["run_hash"], "repo": resume.get("repo", kwargs["repo"])})
    except Exception as error:
        tracker.add_note(f"could not resume Aim run {resume['run_hash']} ({error}); started a new run")
        return None


def name_run(tracker: AimTracker, run: Any) -> None:
    """The run's display name, description and tags; a per-rank run's name and tags say its rank."""
    name, tags = tracker.display_name, list(tracker.tags)
    context = per_rank(tracker)
    if context is not None:  # per-rank runs: grouped by experiment and tags
        name = rank_name(name, context)
        tags += rank_tags(context)
    if name:
        run.name = str(name)
    if tracker.description:
        run.description = str(tracker.description)
    for tag in tags:
        run.add_tag(str(tag))


def announce(run: Any, location: str) -> None:
    """Tell the user where the run is, and how to view a local repo."""
    if "://" in location:
        notice(f"aim: run {run.hash} in the Aim server repo {location}")
    else:
        notice(f"aim: run {run.hash} in the Aim repo {location} (view: aim up --repo {shlex.quote(str(location))})")
