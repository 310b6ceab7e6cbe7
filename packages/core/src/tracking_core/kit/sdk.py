"""The parts of an adapter that are the same for every SDK: SDK objects, the resume hand-shake, per-rank runs.

A backend's ``tracker.py`` should be its SDK mapping plus what is particular to its SDK. What every
adapter repeats around that mapping is here, so it reads the same (and is fixed once) everywhere:

* :func:`sdk_object` -- a read-only property for an object ``start()`` creates (run, writer,
  experiment, task...). A tracker a dispatcher manages starts in its worker thread, so the property
  first waits (bounded) for that start; Accelerate names the object differently per tracker, and
  ``tracker = run = sdk_object("_run")`` gives it both names.
* :func:`saved_resume`, :func:`not_resumed`, :func:`chosen_instead` -- the hand-shake with
  ``run_context.resume`` (what :meth:`~tracking_core.GeneralTracker.resume_state` saved in an earlier
  process): read the saved id, and say in the finish report (plus one warning) why the run was not
  continued. How the SDK is then pointed at the saved run stays in the backend.
* :func:`per_rank`, :func:`rank_name`, :func:`rank_tags` -- per-rank mode (``per_rank=True``): one
  SDK run per rank, named ``<name>-rank<N>`` and grouped as the SDK groups runs.
* :func:`merge_config` -- a config logged after start merges into the one so far, nested sections key
  by key (the same rule for every backend and for the journal's readers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..intake.config import merge_config
from ..notices import warn_once

if TYPE_CHECKING:
    from ..contract.tracker import GeneralTracker, RunContext

__all__ = [
    "chosen_instead",
    "merge_config",
    "not_resumed",
    "per_rank",
    "rank_name",
    "rank_tags",
    "saved_resume",
    "sdk_object",
]


def sdk_object(attribute: str, doc: str | None = None) -> Any:
    """A read-only property returning ``self.<attribute>`` once the tracker has started.

    Reading it waits (bounded) for the dispatcher's worker to run ``start()``, so the training
    script gets the SDK object right after ``init_trackers``; ``None`` before ``start()`` for a tracker
    used on its own. It is a plain ``property``: a held tracker of ``delivery="process"`` replaces it
    with an error naming the delivery process, where the object lives.
    """

    def read(tracker: GeneralTracker) -> Any:
        tracker._wait_for_start()
        return getattr(tracker, attribute)

    return property(read, doc=doc or "The SDK object this tracker writes to (``None`` before ``start()``).")


def saved_resume(
    tracker: GeneralTracker, id_key: str, what: str, *, id_name: str = "run id", noun: str = "run"
) -> tuple[dict[str, Any], str] | None:
    """The saved state in ``run_context.resume`` and the SDK id under ``id_key`` in it; else ``None``.

    ``None`` when the run is not resumed, or (with a report note and one warning) when the saved state
    names no id: ``what`` says what was saved ("W&B run"), ``id_name`` what it lacks, ``noun`` what is
    started instead.
    """
    context = tracker.run_context
    saved = context.resume if context is not None else None
    if saved is None:
        return None
    saved_id = saved.get(id_key) if isinstance(saved, dict) else None
    if not isinstance(saved_id, str) or not saved_id:
        not_resumed(tracker, f"could not resume the saved {what} ({saved!r} names no {id_name}); started a new {noun}")
        return None
    return saved, saved_id


def not_resumed(tracker: GeneralTracker, message: str) -> None:
    """A resumed run that starts anew in the SDK: a finish-report note and one warning per run."""
    tracker.add_note(message)
    warn_once(tracker.name, "resume", message, reason="resume")


def chosen_instead(tracker: GeneralTracker, noun: str, where: str, what: str, saved_id: str) -> None:
    """The user chose the SDK run themselves (``where``): theirs wins, and the report says so."""
    tracker.add_note(f"the {noun} chosen in {where} was used; the saved {what} {saved_id} was not")


def per_rank(tracker: GeneralTracker) -> RunContext | None:
    """The run context when this tracker is one rank's run of a per-rank job, else ``None``."""
    context = tracker.run_context
    return context if context is not None and context.group is not None else None


def rank_name(base: str | None, context: RunContext) -> str:
    """This rank's run name: ``<base>-rank<N>``, the job's group id standing in for a missing ``base``."""
    return f"{base or context.group}-rank{context.rank}"


def rank_tags(context: RunContext) -> list[str]:
    """The tags that find a per-rank job's runs where the SDK has no groups: ``group:<id>``, ``rank:<N>``."""
    return [f"group:{context.group}", f"rank:{context.rank}"]
