"""Starting the run's ``dvclive.Live``: its folder, resuming an earlier process's folder, and who monitors the system."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .offline import offline_live_class

if TYPE_CHECKING:
    from .tracker import DVCLiveTracker

#: ``dvclive.Live`` arguments that need a DVC repository or git (experiments, caching): never passed on.
REPO_ONLY_OPTIONS = ("save_dvc_exp", "dvcyaml", "cache_images", "exp_name", "exp_message")
#: ``dvclive.Live`` arguments passed on as given.
LIVE_OPTIONS = ("resume", "report", "monitor_system")
MONITOR_REPLACED = "DVCLive's monitor_system is off: the run's own system samples (system_metrics=True) replace it"


def default_dir(tracker: DVCLiveTracker, explicit: str | None) -> Path:
    """The DVCLive folder: ``dir`` if given, else the earlier process's on resume, else the run's
    ``dvclive`` folder; used directly, ``<logging_dir>/dvclive`` or ``./dvclive``."""
    context = tracker.run_context
    if explicit is not None:
        return Path(explicit)
    if context is not None:
        earlier = (context.resume or {}).get("dir")
        return Path(earlier) if earlier else Path(context.run_dir) / "dvclive"
    return tracker.logging_dir / "dvclive" if tracker.logging_dir is not None else Path("dvclive")


def open_live(tracker: DVCLiveTracker, folder: Path) -> Any:
    """A ``Live`` without DVC repository, git or Studio (:func:`offline_live_class`) writing to ``folder``;
    a resumed run keeps the earlier process's rows and params, and the run's samples replace DVCLive's monitor."""
    from dvclive import Live  # the SDK import happens here, in the backend's worker thread

    kwargs = dict(tracker.live_kwargs)
    context = tracker.run_context
    if context is not None and (context.resume or {}).get("dir"):
        kwargs["resume"] = True  # the earlier process's rows and params stay
    if context is not None and context.system_metrics:  # the samples replace DVCLive's own monitor
        if kwargs.pop("monitor_system", False):
            tracker.add_note(MONITOR_REPLACED)
    live = offline_live_class(Live)(dir=str(folder), save_dvc_exp=False, dvcyaml=None, **kwargs)
    for path in live.__dict__.get("unreadable", ()):
        tracker.add_note(f"{path} could not be read (a process died writing it): rewritten, the .tsv rows kept")
    return live


def stop_given_monitor(tracker: DVCLiveTracker, live: Any) -> None:
    """End the system monitor of a ``Live`` the application gave, when the run's own samples replace it."""
    monitor = getattr(live, "_system_monitor", None)
    if monitor is not None:  # a given Live's own monitor
        monitor.end()
        live._system_monitor = None
        tracker.add_note(MONITOR_REPLACED)
