"""Process mode, as the dispatcher sees it: which backends go to the delivery process, starting it, its
errors, and carrying on in threads here when it dies.

The delivery process and its link live in :mod:`tracking_core.process`; this is the dispatcher's side
(it reads and changes the dispatcher's state, under its lock where ``log`` could run). The process
modules are imported only when a run uses process mode.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..contract.selection import construct_tracker
from ..contract.tracker import GeneralTracker, RunContext
from ..delivery.worker import ManagedMixin
from ..errors import TrackingError, arrived_cause
from ..intake.record import Record
from ..notices import warn_once

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

_EMPTY: dict[str, Any] = {}


def remote_path(run: Dispatcher, spec: Any, init_kwargs: dict[str, dict[str, Any]] | None) -> tuple[str, str] | None:
    """Where the delivery process finds this backend's class, or ``None`` when it stays in this process.

    Instances, classes defined in ``__main__`` or inside functions, and unpicklable options stay
    here (in threads): the delivery process can only build what it can import.
    """
    if run.options.delivery != "process" or run.state.replay_sources is not None or not isinstance(spec, type):
        return None
    module, qualname = spec.__module__, spec.__qualname__
    if module == "__main__" or "<locals>" in qualname:
        return None
    try:
        import pickle

        from ..process.host import load_class

        if load_class((module, qualname)) is not spec:
            return None
        pickle.dumps(init_kwargs)
    except Exception:
        return None
    return module, qualname


def start_delivery_process(run: Dispatcher, trackers: list[GeneralTracker], context: RunContext, root: Path) -> None:
    import sys

    from ..process.link import DeliveryLink
    from ..process.protocol import BackendSetup, DeliveryOptionsSetup, RunSetup, Setup
    from ..process.remote import RemoteWorker

    session = run.state.session
    assert session is not None
    setup = Setup(
        sys_path=list(sys.path),
        modules=sorted({path[0] for path, _ in run.state.remote.values()}),
        context=RunSetup(
            project=context.project,
            run_id=context.run_id,
            run_dir=str(context.run_dir),
            logging_dir=str(root),
            tracker_logging_dir=run.logging_dir,
            rank=context.rank,
            world_size=context.world_size,
            group=context.group,
            resumed=run.resumed,
            rewind=context.rewind.to_json() if context.rewind else None,
            superseded=[point.to_json() for point in context.superseded],
            system_metrics=run.state.context_options.samples_to_backends,
            started=context.started,
        ),
        options=DeliveryOptionsSetup(
            on_error=run.options.on_error,
            flush_interval=run.options.flush_interval,
            retry=(run.options.retry.first, run.options.retry.longest),
            queue_size=run.options.queue_size,
            on_full=run.options.on_full,
            finish_timeout=run.options.finish_timeout,
        ),
        backends=[
            BackendSetup(
                class_path=run.state.remote[tracker.name][0],
                init_kwargs=run.state.remote[tracker.name][1],
                resume=tracker.run_context.resume if tracker.run_context else None,
                cursor=session.cursor(tracker.name),
                cursor_step=session.cursor_step(tracker.name),
                handed=session.handed(tracker.name),
                backlog=[str(path) for path in session.backlog(tracker.name)],
                backlog_before=run.state.seq + 1,
            )
            for tracker in trackers
        ],
    )
    link = DeliveryLink(
        setup,
        queue_size=run.options.queue_size,
        on_started=session.backend_started,  # the state comes from the delivery process
        on_progress=session.progress,
        on_error=functools.partial(remote_error, run),
        on_death=functools.partial(delivery_died, run),
        on_full=run.options.on_full,
    )
    remotes: list[ManagedMixin] = []
    for tracker in trackers:
        worker = RemoteWorker(tracker, link)
        link.workers[tracker.name] = worker
        remotes.append(worker)
    run.state.link = link
    run.state.set_workers([*run.state.workers, *remotes], [*run.state.puts, link.put_all])


def remote_error(run: Dispatcher, name: str, message: str, cause: tuple[BaseException, str] | None = None) -> None:
    """A backend failed in the delivery process: the same ``TrackingError`` as in thread mode, chained
    to the backend's exception (with its traceback from over there)."""
    error = TrackingError(name, message.removeprefix(f"[{name}] "))
    error.__cause__ = arrived_cause(cause)
    run.state.store_error(error)


def delivery_died(run: Dispatcher, link: Any, why: str) -> None:
    """The delivery process is gone: its backends go on in threads here, from where each one stopped."""
    from ..process.host import load_class
    from ..process.remote import RemoteWorker
    from ..store.cursor import NOWHERE, CursorFile, cursor_name
    from . import managed, setup  # they import this module

    warn_once(
        "dispatcher",
        "delivery",
        f"the delivery process died ({why}); its backends carry on in threads of this process, each "
        "from the last record it holds",
        reason="delivery-died",
    )
    assert run.state.session is not None  # the delivery process belongs to a started run
    with run.state.lock:
        taken = sorted(link.take_over(), key=lambda item: item[0].seq if item[0].seq is not None else -1)
        numbered = [seq for record, _ in taken if (seq := record.seq) is not None]
        before = max(numbered) + 1 if numbered else run.state.seq + 1
        replacements: dict[ManagedMixin, ManagedMixin] = {}
        for remote in [w for w in run.state.all_workers if isinstance(w, RemoteWorker) and not w.finished.is_set()]:
            name = remote.name
            path, kwargs = run.state.remote[name]
            tracker = construct_tracker(load_class(path), str(run.project_name), run.logging_dir, kwargs)
            assert remote.tracker.run_context is not None
            # a rewind is applied once: the delivery process may have done it (a second purge would drop this timeline)
            tracker.run_context = remote.tracker.run_context._replace(resume=remote.resume_state, rewind=None)
            cursor, step, handed, handed_step = CursorFile.read(Path(str(run.run_dir)) / cursor_name(name)) or NOWHERE
            delivery_for = functools.partial(
                setup.delivery_for,
                run,
                cursor=cursor,
                cursor_step=step,
                handed=(handed, handed_step),
                # the journal too: a resumed backend may have been catching up from it
                backlog=run.state.session.sources(name),
                before=before,
                # caught up on like a resumed run's backlog: what the backend's storage already holds
                # (its cursor, or how far its reader says it got) is not delivered again
                backlog_records=[record for record, targets in taken if targets is None or name in targets],
            )
            worker = run.make_worker(tracker, delivery_for)
            worker.report.notes.append(f"the delivery process died ({why}); delivered from this process since")
            worker.manage(functools.partial(managed.direct_call, run))
            worker.launch()
            if run.state.finishing:
                tracker.run_end = remote.tracker.run_end  # set by finish() on the remote worker's tracker
                worker.put(Record("finish", None, None, _EMPTY, None, None))
            remote.replacement = worker
            replacements[remote] = worker
        run.state.set_workers(
            [replacements.get(w, w) for w in run.state.workers],
            every=[replacements.get(w, w) for w in run.state.all_workers],
        )
        run.state.link = None


class _Arriving:
    """Holds a backend's place while it moves from the delivery process to this one: what is logged meanwhile
    waits here, in order, and goes to its new worker first."""

    def __init__(self, tracker: GeneralTracker) -> None:
        self.tracker = tracker
        self.name = tracker.name
        self.records: list[Any] = []
        self.put = self.records.append


def hand_back(run: Dispatcher, remote: Any) -> ManagedMixin:
    """``get_tracker(name, unwrap=True)`` for a backend in the delivery process: it comes to this process.

    The delivery process delivers what it was sent, flushes and ends that backend's SDK run; this process
    reopens the same run (the backend's resume state) in a worker of its own, from the backend's cursor,
    catching up from the journal on anything the delivery process did not store. Records logged meanwhile
    wait and follow in order. The other backends stay in the delivery process.
    """
    from ..process.host import load_class
    from ..store.cursor import NOWHERE, CursorFile, cursor_name
    from . import managed, setup  # they import this module

    session, link, name = run.state.session, run.state.link, remote.name
    assert session is not None and link is not None  # a remote backend belongs to a started run with a link
    path, kwargs = run.state.remote[name]
    tracker = construct_tracker(load_class(path), str(run.project_name), run.logging_dir, kwargs)
    arriving = _Arriving(tracker)
    stand_in = cast(ManagedMixin, arriving)
    with run.state.lock:
        link.hand_back(name, ("finished", None))
        run.state.set_workers(
            [stand_in if worker is remote else worker for worker in run.state.workers],
            [*run.state.puts, arriving.put],
        )
        before = run.state.seq + 1
    if not remote.finished.wait(run.options.finish_timeout):
        raise RuntimeError(
            f"get_tracker({name!r}, unwrap=True): the delivery process did not let go of {name} within "
            f"{run.options.finish_timeout:.0f} s; its SDK object stays there"
        )
    assert remote.tracker.run_context is not None
    # the rewind, if any, was applied over there: applying it again would purge this timeline
    tracker.run_context = remote.tracker.run_context._replace(resume=remote.resume_state, rewind=None)
    cursor, step, handed, handed_step = CursorFile.read(Path(str(run.run_dir)) / cursor_name(name)) or NOWHERE
    delivery_for = functools.partial(
        setup.delivery_for,
        run,
        cursor=cursor,
        cursor_step=step,
        handed=(handed, handed_step),
        backlog=session.sources(name),  # what the delivery process did not store, from before the hand-back
        before=before,
    )
    worker = run.make_worker(tracker, delivery_for)
    worker.report.delivered += remote.report.delivered
    worker.report.notes.append("handed back from the delivery process to this one by get_tracker(unwrap=True)")
    if remote.resume_state is None:  # the backend cannot reopen a run: what came before is in its first one
        warn_once(
            name,
            "get_tracker",
            f"{name} cannot reopen its run: the points logged before get_tracker(unwrap=True) stay in the run the "
            "delivery process ended, the later ones go to a new one (use delivery='thread' to keep one run)",
            reason="hand-back-new-run",
        )
        worker.report.notes.append(f"a new {name} run from the hand-back on: {name} cannot reopen a run")
    worker.manage(functools.partial(managed.direct_call, run))
    worker.launch()
    with run.state.lock:
        for record in arriving.records:
            worker.put(record)
        run.state.set_workers(
            [worker if item is stand_in else item for item in run.state.workers],
            [worker.put if put == arriving.put else put for put in run.state.puts],
            every=[worker if item is remote else item for item in run.state.all_workers],
        )
        remote.replacement = worker
    return worker
