"""``Record``: one call of the public API on its way to a backend, and how it is handed over.

The dispatcher makes one record per call and shares it between every backend's queue, so a record
is immutable. ``seq`` numbers the data records of a run (metrics, media, artifacts) in the order
they were logged; the journal and the spill journals store it, and ``run.json`` keeps, per backend,
the highest ``seq`` the backend holds durably, which is what makes recovery, resume and replay
deliver each record exactly once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ..contract.tracker import GeneralTracker


class Record(NamedTuple):
    #: log, config, images, table, figure, histogram, artifact, artifacts; control kinds: flush (payload: an
    #: Event to set), finish.
    kind: str
    payload: Any
    step: int | None
    #: the caller's per-backend ``log_kwargs``
    kwargs: dict[str, Any]
    #: Unix time of the caller's ``log()`` (metrics only)
    timestamp: float | None
    #: position in the run's stream of data records; ``None`` for config and control records
    seq: int | None = None


#: ``new_record(Record, (kind, payload, step, kwargs, timestamp, seq))`` builds a record at C speed
#: (the generated ``Record.__new__`` is a Python function: it would double the caller's cost).
new_record = tuple.__new__
#: A record as the hot path queues it: a plain tuple in ``Record``'s field order (a ``Record`` is one too).
RecordTuple = tuple[str, Any, "int | None", dict[str, Any], "float | None", "int | None"]

CONTROL_KINDS = frozenset(("flush", "finish"))
#: The library's own side records -> the tracker method that declares it takes them. They carry no ``seq``:
#: never spilled, replayed or counted among the user's records (the run folder keeps them).
SIDE_KINDS = {"system": "log_system_metrics", "context": "log_run_context"}


class Kind(NamedTuple):
    """What a data record's kind stands for at each end of its path."""

    #: the public method a call of this kind goes through: on the dispatcher, and (delivered) on the tracker
    method: str
    #: the ``type`` of its line in a journal (the run journal, a spill journal)
    journal_type: str


#: Every kind of data record, in one table: the dispatcher's and the trackers' method for it, and its journal
#: line. ``deliver`` hands each to its method; a held tracker's methods of these names route back through
#: the dispatcher (``delivery.worker.MANAGED_METHODS``).
KINDS: dict[str, Kind] = {
    "log": Kind("log", "metrics"),
    "config": Kind("store_init_configuration", "config"),
    "images": Kind("log_images", "images"),
    "table": Kind("log_table", "table"),
    "figure": Kind("log_figure", "figure"),
    "histogram": Kind("log_histogram", "histogram"),
    "artifact": Kind("log_artifact", "artifact"),
    "artifacts": Kind("log_artifacts", "artifacts"),
}


def call_kwargs(tracker: GeneralTracker, record: Record) -> dict[str, Any]:
    """The record's kwargs plus what the tracker asked for: ``timestamp`` and ``seq``."""
    kwargs = record.kwargs
    extra: dict[str, Any] = {}
    if record.timestamp is not None and tracker.wants_timestamps:
        extra["timestamp"] = record.timestamp
    if record.seq is not None and tracker.wants_record_ids:
        extra["seq"] = record.seq
    return {**kwargs, **extra} if extra else kwargs


def deliver(tracker: GeneralTracker, record: Record, values: dict[str, Any] | None = None) -> None:
    """Hand one record to a tracker through the contract's methods."""
    kind, payload, step = record.kind, record.payload, record.step
    if kind == "log":
        tracker.log(payload if values is None else values, step=step, **call_kwargs(tracker, record))
    elif kind == "config":
        if record.seq is not None and tracker.wants_record_ids:
            tracker.store_init_configuration(payload, seq=record.seq, **record.kwargs)  # type: ignore[call-arg]
        else:
            tracker.store_init_configuration(payload)
    elif kind == "images":
        tracker.log_images(payload, step=step, **call_kwargs(tracker, record))
    elif kind == "table":
        name, columns, data, dataframe = payload
        tracker.log_table(
            name, columns=columns, data=data, dataframe=dataframe, step=step, **call_kwargs(tracker, record)
        )
    elif kind == "figure":
        from .figures import restore_figure

        figure, name = payload
        tracker.log_figure(restore_figure(figure), name, step=step, **call_kwargs(tracker, record))
    elif kind == "histogram":
        name, histogram = payload
        tracker.log_histogram(name, histogram, step=step, **call_kwargs(tracker, record))
    elif kind in ("artifact", "artifacts"):
        # a tracker with `wants_record_ids` also takes `seq`
        method: Callable[..., None] = tracker.log_artifact if kind == "artifact" else tracker.log_artifacts
        wants_id = record.seq is not None and tracker.wants_record_ids
        method(*payload, **({"seq": record.seq, **record.kwargs} if wants_id else {}))
    else:  # pragma: no cover - internal misuse
        raise ValueError(f"unknown record kind {kind!r}")
