"""Numeric metric points written to Aim's local storage in one RocksDB write per batch.

``Run.track`` stores a point of a metric as separate tree writes -- value, step, epoch and time in the
run's ``seqs`` database, ``last``/``last_step`` (and ``min``/``max`` when they move) in its ``meta``
database -- and each tree write is its own RocksDB write preceded by a range delete: about 80 µs per
value, 0.65 ms per step of 8 metrics. That made Aim the one backend whose data trailed the loop.

For a point of a numeric series that Aim has already started, :class:`SeriesWriter` puts the same keys
and values as Aim's tree views into one write batch per database, and the series' summary (``last``,
``last_step``, ``min``, ``max``) once per batch. Everything else -- the first point of a series (Aim
registers the series in the run's and the repo's metadata), a change of type, text, a context the run
has not seen -- goes through Aim's own tracker, with the time the point was logged. The package's tests
check that both routes leave byte-identical databases, on the oldest and the newest supported Aim.

This leans on Aim 3's private layout (``RunTracker.sequence_infos``, tree views over RocksDB prefix
views). :meth:`SeriesWriter.for_run` returns ``None`` when a run does not look like that (a remote repo,
Aim's tracking thread, another Aim), and every point then goes through ``Run.track``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tracking_core.kit import notice

#: Aim's storage version for numeric series: steps are hashed, and stored in their own array.
_NUMERIC_SERIES_VERSION = 2
_NUMBER_TYPES = {int: "int", float: "float"}


class _AimStorage(NamedTuple):
    """The pieces of Aim's storage layer the writer uses, imported once."""

    encode: Any
    encode_path: Any
    WriteBatch: type[Any]
    PrefixView: type[Any]
    Context: type[Any]


class _Series:
    """One numeric series: Aim's ``SequenceInfo`` plus where its arrays and summary live."""

    __slots__ = ("arrays", "info", "last", "moved_max", "moved_min", "summary")

    def __init__(self, info: Any, arrays: list[tuple[Any, bytes]], summary: tuple[Any, bytes]) -> None:
        self.info = info
        self.arrays = arrays  # (write batch, key prefix) for the val, step, epoch and time arrays
        self.summary = summary  # (write batch, key prefix of ``traces/<context>/<name>/``)
        self.last: tuple[int | float, int] | None = None
        self.moved_max = self.moved_min = False

    def accepts(self, type_name: str | None) -> bool:
        dtype = self.info.dtype
        return type_name is not None and (dtype == type_name or dtype == "number")


class SeriesWriter:
    """Batches the numeric points of one local Aim run; :meth:`commit` makes them visible."""

    def __init__(self, run: Any, storage: _AimStorage) -> None:
        self._run_tracker = run._tracker
        self._storage = storage
        self._encode = storage.encode
        self._encode_path = storage.encode_path
        self._series: dict[tuple[int, str], _Series] = {}
        self._batches: dict[int, tuple[Any, Any]] = {}  # id(database) -> (database, write batch)
        self._dirty: dict[_Series, None] = {}  # the series with points in the batch, in order
        self._contexts: dict[str, Any] = {}
        self._layout_unknown = False
        self._summary_keys = {name: storage.encode_path((name,)) for name in ("last", "last_step", "max", "min")}

    @classmethod
    def for_run(cls, run: Any) -> SeriesWriter | None:
        """A writer for ``run``, or ``None`` when the run is not a local, synchronous Aim 3 run."""
        try:
            from aim.storage.context import Context
            from aim.storage.encoding import encode, encode_path
            from aim.storage.prefixview import PrefixView
            from aimrocks import WriteBatch
        except ImportError:
            return None
        run_tracker = getattr(run, "_tracker", None)
        if run.repo.is_remote_repo or getattr(run_tracker, "_non_blocking", True):
            return None
        needed = ("sequence_infos", "contexts", "meta_run_tree", "_track")
        if not all(hasattr(run_tracker, name) for name in needed):
            return None
        return cls(run, _AimStorage(encode, encode_path, WriteBatch, PrefixView, Context))

    def track(
        self, values: dict[str, Any], step: int | None, epoch: Any, context: dict[str, Any] | None, when: float
    ) -> None:
        """Add one step of ``{name: number}``; points the batch cannot take go through Aim's tracker."""
        context_key = repr(context) if context else ""
        ctx = self._contexts.get(context_key)
        if ctx is None:
            ctx = self._contexts[context_key] = self._storage.Context(context or {})
        if not values:
            return
        if step is None:  # as in Aim: the first series' next step, for every value of the call
            first = self._run_tracker.sequence_infos.get((ctx.idx, next(iter(values))))
            step = first.count if first is not None and first.initialized else 0
        batchable_epoch = epoch is None or type(epoch) is int
        encode, dirty = self._encode, self._dirty
        # the step's index and its step, epoch and time are the same for every value: encoded once
        # (every batchable series is of one storage version, so of one step hash)
        shared: tuple[bytes, bytes, bytes, bytes] | None = None
        context_index, known = ctx.idx, self._series
        for name, value in values.items():
            series = known.get((context_index, name)) or self._open(ctx, name)
            if series is None or not batchable_epoch or not series.accepts(_NUMBER_TYPES.get(type(value))):
                self.track_with_aim(value, name, step, epoch, context, when)
                continue
            info = series.info
            if shared is None:
                shared = (self._encode_path((info.step_hash_fn(step),)), encode(step), encode(epoch), encode(when))
            index = shared[0]
            (
                (values_at, values_prefix),
                (steps_at, steps_prefix),
                (epochs_at, epochs_prefix),
                (times_at, times_prefix),
            ) = series.arrays
            values_at.put(values_prefix + index, encode(value))
            steps_at.put(steps_prefix + index, shared[1])
            epochs_at.put(epochs_prefix + index, shared[2])
            times_at.put(times_prefix + index, shared[3])
            if step >= info.count:
                info.count = step + 1
                series.last = (value, step)
            if value > info.max:
                info.max, series.moved_max = value, True
            if value < info.min:
                info.min, series.moved_min = value, True
            dirty[series] = None

    def commit(self) -> None:
        """Write the batched points, then the summaries that describe them."""
        if not self._dirty:
            return
        encode, keys = self._encode, self._summary_keys
        for series in self._dirty:
            batch, prefix = series.summary
            if series.last is not None:
                batch.put(prefix + keys["last"], encode(series.last[0]))
                batch.put(prefix + keys["last_step"], encode(series.last[1]))
            if series.moved_max:
                batch.put(prefix + keys["max"], encode(series.info.max))
            if series.moved_min:
                batch.put(prefix + keys["min"], encode(series.info.min))
            series.last, series.moved_max, series.moved_min = None, False, False
        self._dirty.clear()
        # The ``seqs`` database was located before ``meta`` (see ``_open``): points land before the summary.
        for database, batch in self._batches.values():
            database.write(batch)
            batch.clear()

    def close(self) -> None:
        """Commit, then let go of the run's databases so that closing the run really closes them."""
        self.commit()
        self._batches.clear()
        self._series.clear()

    def track_with_aim(self, value: Any, name: str, step: int | None, epoch: Any, context: Any, when: float) -> None:
        """One value through Aim's own tracker, stamped with ``when`` (the time it was logged)."""
        self.commit()  # Aim may write to a series with points still in the batch: keep their order
        self._run_tracker._track(value, when, name, step, epoch, context=context)

    # -- internals --------------------------------------------------------------------------------

    def _open(self, ctx: Any, name: str) -> _Series | None:
        """The batchable series ``(ctx, name)``: numeric, started by Aim, in a context Aim registered."""
        info = self._run_tracker.sequence_infos.get((ctx.idx, name))
        if info is None or not info.initialized or info.version != _NUMERIC_SERIES_VERSION:
            return None
        if ctx not in self._run_tracker.contexts or info.step_view is None:
            return None
        if self._layout_unknown:
            return None
        try:
            arrays = [self._locate(view) for view in (info.val_view, info.step_view, info.epoch_view, info.time_view)]
            meta = self._locate(self._run_tracker.meta_run_tree)
        except AttributeError as error:  # not trees over RocksDB prefix views: leave every point to Aim
            self._layout_unknown = True
            notice(f"aim: storage layout not recognised ({error}); every point goes through Run.track")
            return None
        summary = (meta[0], meta[1] + self._encode_path(("traces", ctx.idx, name)))
        series = self._series[ctx.idx, name] = _Series(info, arrays, summary)
        return series

    def _locate(self, view: Any) -> tuple[Any, bytes]:
        """(write batch of the database under ``view``, absolute key prefix of the view's entries)."""
        container = getattr(view, "tree", view).container
        prefix = b""
        while isinstance(container, self._storage.PrefixView):
            prefix = container.prefix + prefix
            container = container.parent
        database = container.db
        if id(database) not in self._batches:
            self._batches[id(database)] = (database, self._storage.WriteBatch())
        return self._batches[id(database)][1], prefix
