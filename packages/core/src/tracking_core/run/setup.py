"""Run set-up: what ``Dispatcher.init_trackers`` does, and how each backend's ``Delivery`` is built.

``init_trackers`` chooses (or reopens) the run folder and id, per rank when asked, builds every tracker
with its :class:`~tracking_core.contract.tracker.RunContext`, sends the ones that can go to the delivery
process there (:mod:`.process_mode`) and starts a worker in a thread here for the others, each with a
``Delivery`` that picks up where the run's earlier process left it (cursor, backlog; ``delivery_for``).
These functions read and set the dispatcher's state; ``log`` cannot run before they return.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..backends.jsonl import JsonlTracker
from ..context import RunContextCapture
from ..contract.noop import NoOpTracker
from ..contract.selection import DEFAULT_LOGGING_DIR, construct_tracker
from ..contract.tracker import GeneralTracker, RunContext, has_capability
from ..delivery.build import DeliveryPlan, RunPlace, build_delivery
from ..delivery.engine import Delivery
from ..delivery.resume import not_resumed_note, resume_state_of
from ..intake.config import sanitize_config
from ..intake.preflight import check_run_can_start
from ..intake.record import Record
from ..intake.redaction import redact_init_kwargs
from ..kit.paths import check_name
from ..notices import logger, notice, reset_warnings
from ..report import BackendReport
from ..store.manifest import MANIFEST_NAME
from ..store.owed import predecessor_owing, replay_command
from . import lifecycle, managed, process_mode
from .rendezvous import job_run_id, publish_run_id, shared_run_id
from .session import RunSession, choose_job_run_id, named_run_id, rank_folder, resume_for_named

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

_EMPTY: dict[str, Any] = {}


def init_trackers(
    run: Dispatcher, project_name: str, config: Any, init_kwargs: dict[str, dict[str, Any]] | None
) -> None:
    """Create every tracker and start it in its worker (``Dispatcher.init_trackers``)."""
    if run.state.initialized:
        raise RuntimeError("init_trackers() was already called on this Dispatcher; create a new one for a new run.")
    project_name = check_name(str(project_name), "project_name")  # the path rule (paths.py)
    runs_trackers = run.rank == 0 or run.options.per_rank
    check_run_can_start(run.state.specs, Path(run.logging_dir or DEFAULT_LOGGING_DIR), writes=runs_trackers)
    run.state.initialized = True
    reset_warnings()  # "once" means once per run: a new run in the same process warns again
    init_kwargs = redact_init_kwargs(init_kwargs or {})  # secrets in tags/notes (redaction.py)
    run.project_name = project_name
    root = Path(run.logging_dir or DEFAULT_LOGGING_DIR)
    session = per_rank_session(run, root) if run.options.per_rank else None
    if session is None and run.rank != 0:
        session = other_rank_session(run, root / run.project_name)
    if session is None:
        named = named_run_id(run.state.specs, init_kwargs) if run.state.replay_sources is None else None
        resume = run.resume if named is None else resume_for_named(root / run.project_name, named, run.resume)
        session = RunSession(
            root / run.project_name,
            run.project_name,
            resume,
            writes=True,
            replay=run.state.replay_sources is not None,
            run_id=named,
        )
        run.run_id = session.run_id
        if run.world_size > 1 and run.state.replay_sources is None:
            publish_run_id(root / run.project_name, run.project_name, session.run_id)
    run.state.session = session
    if run.state.started is not None and session.writes:
        session.manifest.started = run.state.started
    run.run_dir, run.resumed = session.run_dir, session.resumed
    if session.writes and not run.resumed and run.state.replay_sources is None:
        warn_about_predecessor(session.run_dir)
    point = session.rewind_to(run.resume_step) if run.resume_step is not None else None
    run.state.step, run.state.seq = session.last_step, session.last_seq
    context = RunContext(
        run.project_name,
        cast(str, run.run_id) if not run.options.per_rank else f"{run.run_id}-rank{run.rank}",  # set by now
        run.run_dir,
        root,
        rank=run.rank,
        world_size=run.world_size,
        group=run.run_id if run.options.per_rank else None,
        rewind=point,
        superseded=session.rewinds,
        started=session.manifest.started,
    )
    clean_config = sanitize_config(config) if config is not None else None
    if clean_config is not None:
        import copy  # each backend gets its own copy: one backend mutating it cannot affect another
    remote: list[GeneralTracker] = []
    for spec in [*run.state.specs, *journal_first(run)]:
        name = spec.name
        if _writes_the_journal(spec):
            run.state.journal = name
        if not runs_trackers:  # one run per job: only global rank 0 runs trackers, whatever the class says
            run.state.skipped[name] = NoOpTracker(name)
            continue
        tracker = (
            spec
            if isinstance(spec, GeneralTracker)
            else construct_tracker(spec, run.project_name, run.logging_dir, init_kwargs.get(name))
        )
        tracker.run_context = context._replace(
            resume=session.resume_state(name) if run.resumed else None,
            system_metrics=run.state.context_options.samples_to_backends
            and has_capability(tracker, "log_system_metrics"),
        )
        path = process_mode.remote_path(run, spec, init_kwargs.get(name))
        if path is not None:
            run.state.remote[name] = (path, init_kwargs.get(name))
            remote.append(tracker)
            continue
        run.state.workers.append(run.make_worker(tracker, functools.partial(delivery_for, run)))
    run.state.set_workers(run.state.workers)
    if runs_trackers and run.state.replay_sources is None:
        session.name_backends([spec.name for spec in run.state.specs])
    if remote:
        process_mode.start_delivery_process(run, remote, context, root)
    run.state.set_workers(run.state.workers, run.state.puts, every=list(run.state.workers))
    for worker in run.state.workers:
        worker.manage(functools.partial(managed.direct_call, run))
    if clean_config is not None:
        run.state.seq += 1
    for worker in run.state.workers:
        worker.launch()
        if clean_config is not None:
            worker.put(Record("config", copy.deepcopy(clean_config), None, _EMPTY, None, run.state.seq))
    if run.state.replay_sources is None:
        run.state.context_capture = RunContextCapture.start(run, run.state.context_options)
    lifecycle.watch(run)


def warn_about_predecessor(run_dir: Path) -> None:
    """The project's previous run on this host ended without ``finish()`` (killed, a Ray worker torn down) and
    some backend lacks part of its journal: say so once, with the command that delivers it."""
    found = predecessor_owing(run_dir.parent, run_dir)
    if found is not None:
        earlier, owed = found
        lacking = ", ".join(f"{name} {count}" for name, count in owed.items())
        logger.warning(
            "the earlier run %s ended without finish() and its backends lack records of its journal (%s): "
            "%s delivers them",
            earlier.name,
            lacking,
            replay_command(earlier, sorted(owed)),
        )


def journal_first(run: Dispatcher) -> list[type[GeneralTracker]]:
    """The run's journal, written whatever ``log_with`` says: every run can be shown, exported, compared
    and replayed into a backend from where that backend stopped (a SIGKILL, a worker torn down mid
    start-up). Kept out of ``trackers``, ``get_tracker`` and the report's backends when the user did not
    name ``jsonl`` (:attr:`Dispatcher._internal`). A replay into an existing run writes none: its source
    is that run's journal."""
    if run.state.replay_sources is not None or any(_writes_the_journal(spec) for spec in run.state.specs):
        return []
    run.state.internal = frozenset((JsonlTracker.name,))
    return [JsonlTracker]


def _writes_the_journal(spec: type[GeneralTracker] | GeneralTracker) -> bool:
    cls = spec if isinstance(spec, type) else type(spec)
    return issubclass(cls, JsonlTracker) or spec.name == JsonlTracker.name


def per_rank_session(run: Dispatcher, root: Path) -> RunSession:
    """Per-rank mode: the job's run id travels from rank 0; each rank keeps its own run folder in it."""
    project_dir = root / str(run.project_name)
    run.run_id, channel = shared_run_id(project_dir, run.rank, lambda: choose_job_run_id(project_dir, run.resume))
    run.run_id = check_name(run.run_id, "run id")
    job_dir, folder = project_dir / run.run_id, rank_folder(run.rank)
    earlier = (job_dir / folder / MANIFEST_NAME).is_file()
    if run.resume and not earlier:
        notice(f"resume: rank {run.rank} has no earlier run in {job_dir}; starting a new one")
    resume = folder if run.resume and earlier else False
    logger.debug("per-rank run %s (id from %s), rank %d of %d", run.run_id, channel, run.rank, run.world_size)
    return RunSession(job_dir, str(run.project_name), resume, writes=True, run_id=folder)


def other_rank_session(run: Dispatcher, project_dir: Path) -> RunSession:
    """One run per job, on a rank other than 0: the run rank 0 opened, its id and its folder.

    The id comes from rank 0 (``job_run_id``); this rank writes nothing in the run. Where the file
    system is shared the folder is rank 0's; elsewhere an empty folder of the same path is made here,
    so that ``run.run_dir`` exists on every rank for the rank's own files.
    """
    project = str(run.project_name)
    run_id, channel = job_run_id(project_dir, project, run.rank)
    run.run_id = check_name(run_id, "run id")
    logger.debug("rank %d of run %s (id from %s)", run.rank, run.run_id, channel)
    session = RunSession(project_dir, project, run.run_id if run.resume else False, writes=False, run_id=run.run_id)
    try:
        session.run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        logger.warning("rank %d: cannot make the run folder %s: %s", run.rank, session.run_dir, error)
    return session


def delivery_for(
    run: Dispatcher,
    tracker: GeneralTracker,
    report: BackendReport,
    *,
    cursor: int | None = None,
    cursor_step: int | None = None,
    handed: tuple[int, int] | None = None,
    backlog: list[Path] | None = None,
    before: float | None = None,
    backlog_records: list[Record] | None = None,
) -> Delivery:
    """The ``Delivery`` of one backend of this run, from where the run's earlier process left it unless
    told otherwise (a take-over after the delivery process died passes its own positions)."""
    session, name = run.state.session, tracker.name
    assert session is not None
    if backlog is not None:
        before = run.state.seq + 1 if before is None else before
    elif run.state.replay_sources is not None:
        # what the backend left in its spill (the journal did not hold it yet) is owed as much as the journal's
        spill = [path for path in session.sources(name) if path not in run.state.replay_sources]
        backlog, before = [*run.state.replay_sources, *spill], float("inf")
    else:
        backlog, before = session.backlog(name), run.state.seq + 1
    plan = DeliveryPlan(
        cursor=session.cursor(name) if cursor is None else cursor,
        cursor_step=session.cursor_step(name) if cursor_step is None else cursor_step,
        handed=session.handed(name) if handed is None else handed,
        backlog_paths=backlog,
        backlog_before=before,
        backlog_records=backlog_records or (),
    )
    return build_delivery(
        tracker,
        report,
        place=RunPlace(run.project_name or "run", run.run_id, session.run_dir),
        options=run.options.for_delivery(),
        plan=plan,
        cursor_file=session.cursor_file(name),
        on_started=lambda: backend_started(run, tracker, report),
        on_progress=session.progress,
        error_sink=run.state.store_error,
        run_journal=run.state.run_journal,
    )


def backend_started(run: Dispatcher, tracker: GeneralTracker, report: BackendReport) -> None:
    """In the worker, once its backend is up: keep what a later process needs to resume it."""
    note = not_resumed_note(tracker, run.resumed)
    if note is not None:
        report.notes.append(note)
    if run.state.session is not None and run.state.session.writes:
        run.state.session.backend_started(tracker.name, resume_state_of(tracker))
