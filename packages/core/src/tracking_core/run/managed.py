"""Direct calls on a held tracker: ``run.get_tracker("mlflow").log(...)`` in a training script.

The tracker object's contract methods are routed here (``BackendWorker.manage``): the call becomes the
same record the dispatcher's own method makes (same checks, same copies), queued for that backend
only, so it keeps its place in the backend's order and a failure stays in its worker.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..delivery.worker import ManagedMixin, direct_arguments
from ..intake.record import Record
from ..intake.values import snapshot
from ..notices import warn_once

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

_EMPTY: dict[str, Any] = {}
_now = time.time


def direct_call(
    run: Dispatcher, worker: ManagedMixin, method: str, own: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``tracker.<method>(...)`` called by the script on a tracker this dispatcher manages.

    The call becomes the same record the dispatcher's own method makes (same checks, same
    copies), queued for that backend only, so it keeps its place in the backend's order and a
    failure stays in its worker. ``flush`` and ``finish`` wait, as the SDK's own would.
    """
    arguments = direct_arguments(own, args, kwargs)
    if worker not in run._workers:
        if run._report is None and not run._in_forked_child:  # this backend alone was finished
            warn_once(worker.name, method, f"{method}() after finish() is ignored", reason="after-finish")
        else:
            run._not_running(f"{worker.name}.{method}")
        return None
    if method == "flush":
        return run._flush_workers([worker], None)
    if method == "finish":
        return finish_one(run, worker)
    extra = arguments.pop("**", {})
    positional = list(arguments.values())
    step = arguments.get("step")
    run._only.worker = worker
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
        run._only.worker = None
    return None


def log_to(
    run: Dispatcher, worker: ManagedMixin, values: dict[str, Any], step: int | None, kwargs: dict[str, Any]
) -> None:
    """``log`` for one backend (a direct call on its tracker): the dispatcher's step and value rules."""
    flat, rejected = snapshot(values)
    if rejected:
        run._reject(rejected)
    with run._lock:
        step = run._step + 1 if step is None else run._checked_step(step)
        run._step = step
        run._seq = seq = run._seq + 1
        worker.put(Record("log", flat, step, kwargs or _EMPTY, _now(), seq))
    if run._pending_error is not None:
        run._raise_pending()


def finish_one(run: Dispatcher, worker: ManagedMixin) -> None:
    """``tracker.finish()`` on a managed tracker: close that backend now; the others carry on."""
    with run._lock:
        run._set_workers([other for other in run._workers if other is not worker])
    worker.put(Record("finish", None, None, _EMPTY, None, None))
    if not worker.join(run.finish_timeout):
        worker.abandon()
