"""What each optional ``log_*`` call checks and copies in the caller's thread, before it is queued.

One function per kind: it refuses what no backend could store (a warning or an error naming the
parameter, here at the call and not later in a worker) and returns the record's payload, copied so the
caller may change or reuse its objects once the call returns. :func:`fan_out` queues it for the backends.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ..backends.jsonl import JOURNAL_FOR
from ..contract.histogram import Histogram, histogram_from_counts, histogram_of
from ..contract.tracker import has_capability
from ..intake.config import sanitize_config
from ..intake.media import figure_problem, image_caveat, table_problem
from ..intake.preflight import check_table_arguments
from ..intake.record import Record
from ..intake.values import image_problem, key_problem, snapshot_media
from ..kit.paths import check_artifact_path, warn_links_leaving
from ..notices import warn_once
from .options import checked_step

if TYPE_CHECKING:
    from ..delivery.worker import ManagedMixin
    from .dispatcher import Dispatcher

_EMPTY: dict[str, Any] = {}


def reject(run: Dispatcher, rejected: dict[str, str]) -> None:
    """Values refused at the call: one warning each, kept for the report."""
    for key, reason in rejected.items():
        warn_once("all backends", key, f"not logged: {reason}", reason="rejected:" + reason.split(" ")[0])
        run.state.rejected[key] = reason


def checked_step_after(run: Dispatcher, step: Any) -> int:
    """``step`` checked; a step lower than the run's last is passed on with one warning."""
    step = checked_step(step)
    if step < run.state.step:
        warn_once(
            "dispatcher",
            "step",
            f"step went back from {run.state.step} to {step}; points are passed on, but some backends (W&B) drop them",
            reason="step-backwards",
        )
    return cast(int, step)  # checked_step's int


def current_step(run: Dispatcher, step: Any) -> int:
    """Media logged without a step belongs to the step of the last metrics."""
    return max(run.state.step, 0) if step is None else checked_step(step)


def not_running(run: Dispatcher, what: str) -> None:
    """A call when the run takes no records: ignored with a warning, or an error before ``init_trackers``."""
    state = run.state
    if state.in_forked_child:
        warn_once(
            "dispatcher",
            what,
            f"{what}() in a process forked from the one that started run {run.run_id} is ignored: "
            "its backends live in the parent (log from the parent, or start a run in the child)",
            reason="forked",
        )
    elif state.report is not None:
        warn_once("dispatcher", what, f"{what}() after finish() is ignored", reason="after-finish")
    elif not state.initialized and (run.rank == 0 or run.options.per_rank):
        raise RuntimeError(f"{what}() before init_trackers(): call init_trackers(project_name) first")


class Refused(NamedTuple):
    """A call no backend can store: ``what`` (its key or name) is reported as not logged, with ``problem``."""

    what: str
    problem: str


def images_payload(values: dict[str, Any], rejected: dict[str, str]) -> dict[str, Any]:
    """The images that can be logged, by key; each refused key goes to ``rejected`` with one warning."""
    payload = {}
    for key, value in values.items():
        if getattr(value, "ndim", None) == 4:  # a batch (NHWC/NCHW), as accelerate's TensorBoard tracker takes
            value = list(value)
        items = value if isinstance(value, (list, tuple)) else [value]
        problem = next((p for p in map(image_problem, items) if p), None) if items else "an empty list"
        if problem:
            warn_once("all backends", str(key), f"image not logged: {problem}", reason="bad-image", stacklevel=3)
            rejected[str(key)] = problem
            continue
        caveat = next((c for c in map(image_caveat, items) if c), None)
        if caveat:
            warn_once("all backends", str(key), caveat, reason="image-range")
        payload[str(key)] = snapshot_media(value)
    return payload


def table_payload(
    table_name: str, columns: list[str] | None, data: Iterable[Sequence[Any]] | None, dataframe: Any
) -> tuple[Any, ...] | Refused:
    if data is None and dataframe is None:
        raise ValueError("log_table needs `data` (with optional `columns`) or `dataframe`")
    if data is not None and hasattr(data, "__iter__") and not isinstance(data, (list, tuple, str, bytes, dict)):
        data = list(data)  # an iterator is read once, here: the checks and the copy below see the same rows
    check_table_arguments(columns, data, dataframe)  # wrong types: an error naming the parameter
    if problem := table_problem(columns, data, dataframe):  # wrong shapes: refused for every backend (media.py)
        return Refused(str(table_name), problem)
    return (
        table_name,
        list(columns) if columns is not None else None,
        [list(row) for row in data] if data is not None else None,
        dataframe.copy() if hasattr(dataframe, "copy") else dataframe,
    )


def figure_payload(figure: Any, name: str) -> tuple[Any, str] | Refused:
    from ..intake.figures import copy_figure  # pickle and copy load only for scripts that log figures

    if problem := figure_problem(figure):  # media.py: refused here, for every backend
        return Refused(str(name), problem)
    snapshot, problem = copy_figure(figure)
    if problem:
        warn_once(
            "all backends",
            name,
            f"figure could not be copied ({problem}); it is drawn as it is when each backend gets to it, "
            "so leave it unchanged until flush()",
            reason="figure-copy",
            stacklevel=3,
        )
    return snapshot, name


def histogram_payload(name: Any, values: Any, counts: Any, edges: Any, bins: int) -> tuple[str, Histogram] | Refused:
    name = str(getattr(name, "value", name))
    if problem := key_problem(name):
        raise ValueError(f"log_histogram: name {name!r}: {problem}")
    if isinstance(values, Histogram):
        histogram = values
    elif values is not None:
        if counts is not None or edges is not None:
            raise ValueError("log_histogram takes `values`, or `counts` with `edges`, not both")
        try:
            histogram, skipped = histogram_of(values, bins)
        except ValueError as error:
            if "finite" not in str(error):
                raise
            return Refused(name, "a histogram of no finite value")
        if skipped:
            warn_once(
                "all backends",
                name,
                f"{skipped} non-finite value(s) left out of the histogram",
                reason="histogram-non-finite",
                stacklevel=3,
            )
    elif counts is not None and edges is not None:
        histogram = histogram_from_counts(counts, edges)
    else:
        raise ValueError("log_histogram needs `values`, or `counts` with `edges`")
    return name, histogram


def artifact_payload(local_path: str | os.PathLike[str], artifact_path: str | None) -> tuple[str, str | None]:
    if not os.path.isfile(local_path):
        raise FileNotFoundError(f"log_artifact: {local_path} is not a file")
    artifact_path = check_artifact_path(artifact_path)  # the path rule (paths.py)
    return os.fspath(local_path), artifact_path


def artifacts_payload(local_dir: str | os.PathLike[str], artifact_path: str | None) -> tuple[str, str | None]:
    if not os.path.isdir(local_dir):
        raise FileNotFoundError(f"log_artifacts: {local_dir} is not a directory")
    artifact_path = check_artifact_path(artifact_path)  # the path rule (paths.py)
    warn_links_leaving(local_dir)  # paths.py: links out of the folder are named, once
    return os.fspath(local_dir), artifact_path


def receivers(run: Dispatcher, only: ManagedMixin | None) -> list[tuple[ManagedMixin, dict[str, str]]]:
    """The workers a record goes to, each with what it adds to the record's keywords.

    A call on one backend's own tracker (``only``) reaches that backend, and the run's journal too: the
    journal holds every record the user logged, so a resumed run's catch-up and a replay can deliver this
    one as well; its line names the backend it is for, and they give it to that backend only.
    """
    if only is None:
        return [(worker, _EMPTY) for worker in run.state.journal_first(run.state.workers)]
    tag = {JOURNAL_FOR: only.name}
    journal = run.state.journal
    if only.name == journal:
        return [(only, tag)]
    return [*((worker, tag) for worker in run.state.workers if worker.name == journal), (only, _EMPTY)]


def fan_out(
    run: Dispatcher,
    capability: str,
    record_for: Any,
    step: Any,
    log_kwargs: dict[str, dict[str, Any]] | None,
    instead: str | None = None,
) -> None:
    """Queue one record for the backends with ``capability``; ``instead`` says what the others do
    with it (they get it too, and the contract's default stores that), else they skip it.

    Called by the dispatcher's ``log_*`` methods only: its warning's ``stacklevel`` points at their caller."""
    if not run.state.workers:
        not_running(run, capability)
        return
    only = getattr(run.state.only, "worker", None)
    with run.state.lock:
        step = current_step(run, step)
        run.state.seq = seq = run.state.seq + 1
        lacking = []
        for worker, tag in receivers(run, only):
            capable = has_capability(worker.tracker, capability)
            if not capable:
                lacking.append(worker.name)
            if capable or instead:
                kwargs = log_kwargs.get(worker.name, _EMPTY) if log_kwargs else _EMPTY
                worker.put(Record(record_for[0], record_for[1], step, {**kwargs, **tag} if tag else kwargs, None, seq))
    if run.state.pending_error is not None:
        run.state.raise_pending()
    if lacking:
        warn_once(
            ", ".join(lacking),
            capability,
            f"{capability} is not supported by {', '.join(lacking)}; "
            + (f"those backends store {instead}" if instead else "those backends skip it"),
            reason="capability",
            stacklevel=4,
        )


def queue_config(run: Dispatcher, values: Any) -> None:
    """``run.log_config(values)``: the sanitised config after start, queued for every backend (or the
    one whose held tracker was called), each with its own copy."""
    if not run.state.workers:
        not_running(run, "log_config")
        return
    clean = sanitize_config(values)
    if not clean:
        return
    import copy  # each backend gets its own copy, as with init's config

    only = getattr(run.state.only, "worker", None)
    with run.state.lock:
        run.state.seq = seq = run.state.seq + 1
        for worker, tag in receivers(run, only):
            worker.put(Record("config", copy.deepcopy(clean), None, tag or _EMPTY, None, seq))
    if run.state.pending_error is not None:
        run.state.raise_pending()
