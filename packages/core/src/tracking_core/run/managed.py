"""Direct calls on a held tracker: ``run.get_tracker("mlflow").log(...)`` in a training script.

The tracker object's contract methods are routed here (``BackendWorker.manage``): the call becomes the
same record the dispatcher's own method makes (same checks, same copies), queued for that backend
only, so it keeps its place in the backend's order and a failure stays in its worker.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..contract.noop import NoOpTracker
from ..delivery.worker import ManagedMixin, direct_arguments
from ..intake.record import Record
from ..intake.values import snapshot
from ..notices import logger, warn_once
from . import calls, closing, process_mode

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

_EMPTY: dict[str, Any] = {}
_now = time.time
#: how long ``get_tracker(name, unwrap=True)`` waits for the backend's start-up before it warns
UNWRAP_TIMEOUT = 120.0


def direct_call(
    run: Dispatcher, worker: ManagedMixin, method: str, own: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``tracker.<method>(...)`` called by the script on a tracker this dispatcher manages.

    The call becomes the same record the dispatcher's own method makes (same checks, same
    copies), queued for that backend only, so it keeps its place in the backend's order and a
    failure stays in its worker. ``flush`` and ``finish`` wait, as the SDK's own would.
    """
    arguments = direct_arguments(own, args, kwargs)
    if worker not in run.state.workers:
        if run.state.report is None and not run.state.in_forked_child:  # this backend alone was finished
            warn_once(worker.name, method, f"{method}() after finish() is ignored", reason="after-finish")
        else:
            calls.not_running(run, f"{worker.name}.{method}")
        return None
    if method == "flush":
        return closing.flush_workers(run, [worker], None)
    if method == "finish":
        return finish_one(run, worker)
    extra = arguments.pop("**", {})
    positional = list(arguments.values())
    step = arguments.get("step")
    run.state.only.worker = worker
    try:
        if method == "log":
            log_to(run, worker, positional[0], step, extra)
        elif method == "store_init_configuration":
            run.log_config(positional[0])
        else:
            log_kwargs = {worker.name: extra} if extra else None
            if method == "log_images":
                run.log_images(positional[0], step=step, log_kwargs=log_kwargs)
            elif method == "log_table":
                names = ("columns", "data", "dataframe")
                columns, data, dataframe = (arguments.get(name) for name in names)
                run.log_table(positional[0], columns, data, dataframe, step=step, log_kwargs=log_kwargs)
            elif method == "log_figure":
                run.log_figure(positional[0], str(positional[1]), step=step, log_kwargs=log_kwargs)
            elif method == "log_histogram":
                run.log_histogram(positional[0], positional[1], step=step, log_kwargs=log_kwargs)
            elif method == "log_artifact":
                run.log_artifact(positional[0], positional[1] if len(positional) > 1 else None)
            elif method == "log_artifacts":
                run.log_artifacts(positional[0], positional[1] if len(positional) > 1 else None)
    finally:
        run.state.only.worker = None
    return None


def log_to(
    run: Dispatcher, worker: ManagedMixin, values: dict[str, Any], step: int | None, kwargs: dict[str, Any]
) -> None:
    """``log`` for one backend (a direct call on its tracker): the dispatcher's step and value rules."""
    flat, rejected = snapshot(values)
    if rejected:
        calls.reject(run, rejected)
    with run.state.lock:
        step = run.state.step + 1 if step is None else calls.checked_step_after(run, step)
        run.state.step = step
        run.state.seq = seq = run.state.seq + 1
        for receiver, tag in calls.receivers(run, worker):
            receiver.put(Record("log", flat, step, {**kwargs, **tag} if tag else kwargs or _EMPTY, _now(), seq))
    if run.state.pending_error is not None:
        run.state.raise_pending()


def finish_one(run: Dispatcher, worker: ManagedMixin) -> None:
    """``tracker.finish()`` on a managed tracker: close that backend now; the others carry on."""
    with run.state.lock:
        run.state.set_workers([other for other in run.state.workers if other is not worker])
    worker.put(Record("finish", None, None, _EMPTY, None, None))
    if not worker.join(run.options.finish_timeout):
        worker.abandon()


def held_tracker(run: Dispatcher, name: str, unwrap: bool) -> Any:
    """``run.get_tracker(name, unwrap)``: the tracker object (its calls come back here), or its SDK object."""
    name = str(getattr(name, "value", name))
    for worker in run.state.all_workers:
        if worker.name == name and name not in run.state.internal:
            if unwrap:
                if getattr(worker, "delivery", None) is None:  # a RemoteWorker: the SDK lives in the delivery process
                    worker = process_mode.hand_back(run, worker)
                if not worker.started.wait(UNWRAP_TIMEOUT):
                    logger.warning("backend %r has not started after %.0f s", name, UNWRAP_TIMEOUT)
                return worker.tracker.tracker
            return worker.tracker
    if name in run.state.skipped or (run.rank != 0 and not run.options.per_rank) or run.state.in_forked_child:
        noop = run.state.skipped.get(name) or NoOpTracker(name)
        return noop.tracker if unwrap else noop
    names = [worker.name for worker in run.state.all_workers if worker.name not in run.state.internal]
    raise ValueError(f"{name!r} is not a tracker of this run; its trackers are {names}")
