"""The live path: one backend's records handed to its SDK as they come, and refused values isolated.

A call that returned stored its records (see ``Delivery.mark_stored``); ``PartialDelivery`` tells how much
of a failed batch was stored. A value error (the SDK refuses a key or a value) costs only what it
refuses: the batch is retried record by record, a record key by key (halving), and the refused keys
are skipped with one warning and a report entry. Any other error means the backend is down, which
``Outage.failed`` handles. Every call into the SDK goes through :meth:`Live.attempt`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import PartialDelivery
from ..intake.record import KINDS, Record, call_kwargs, deliver
from ..notices import logger, warn_once
from .missing import KIND_NAMES, missing_reason
from .recovery import is_refusal

if TYPE_CHECKING:
    from .engine import Delivery


class Live:
    """Calls into the SDK for one :class:`~.engine.Delivery`, whose state it reads and moves on."""

    def __init__(self, delivery: Delivery) -> None:
        self.delivery = delivery

    def deliver_metrics(self, records: list[Record]) -> None:
        records = self.delivery.positions.unseen(records)
        if not records:
            return
        tracker = self.delivery.tracker
        entries = [
            (self.delivery.values.prepare(record.payload), record.step, call_kwargs(tracker, record))
            for record in records
        ]
        self.delivery.in_flight = records
        self.delivery.positions.hand_over(records)
        if len(entries) == 1:
            values, step, kwargs = entries[0]
            done, error = self.attempt(tracker.log, values, step=step, **kwargs)
        else:
            done, error = self.attempt(tracker.log_batch, entries)
        if self.delivery.abandoned:
            self.delivery.mark_stored_after_abandon(records if error is None else records[:done])
            return
        if error is None:
            self.delivery.in_flight = []
            self.delivery.mark_stored(records)
            return
        self.delivery.mark_stored(records[:done])
        rest = records[done:]
        # Owed until each is stored, skipped or spilled: a finish timeout during the retries below spills them.
        self.delivery.in_flight = rest
        if isinstance(error, ImportError):
            self.delivery.in_flight = []
            self.kind_unavailable("log", error, rest)
            return
        if not is_refusal(error):
            # Down, whether or not the call stored the records before the one it failed on: the rest
            # waits in the spill until the backend answers (a failed retry is no proof the record is bad).
            self.delivery.in_flight = []
            self.delivery.outage.failed(error, "log" if len(entries) == 1 else "log_batch", rest)
            return
        self.refusal_seen(error)
        for index, record in enumerate(rest):
            self.delivery.in_flight = rest[index:]
            remainder, failure = self.store_isolating(record)
            if self.abandoned_meanwhile():
                return
            if failure is not None:
                self.delivery.in_flight = []
                self.delivery.outage.failed(failure, "log", [remainder, *rest[index + 1 :]])
                return
        self.delivery.in_flight = []

    def abandoned_meanwhile(self) -> bool:
        """Read after calls into the backend: ``abandon`` runs on another thread while one is in the SDK."""
        return self.delivery.abandoned

    def store_isolating(self, record: Record) -> tuple[Record, BaseException | None]:
        """Store one metric record, skipping only the keys the backend refuses (found by halving).

        A finish timeout that gives up on one of these calls has spilled the whole record: the spill
        then repeats the keys stored before that call (the rest would be lost otherwise).
        """
        payload = record.payload
        groups = [list(payload)]
        while groups:
            group = groups.pop(0)
            values = self.delivery.values.prepare({key: payload[key] for key in group})
            kwargs = call_kwargs(self.delivery.tracker, record)
            self.delivery.positions.hand_over([record])
            _, error = self.attempt(self.delivery.tracker.log, values, step=record.step, **kwargs)
            if self.delivery.abandoned:
                if error is None and not groups:
                    self.delivery.mark_stored_after_abandon([record])
                return record, None
            if error is None:
                continue
            if not is_refusal(error):
                rest = [key for part in (group, *groups) for key in part]
                return record._replace(payload={key: payload[key] for key in rest}), error
            if len(group) == 1:
                self.refuse(group[0], record, error)
            else:
                half = len(group) // 2
                groups[0:0] = [group[:half], group[half:]]
        self.delivery.mark_stored([record])
        return record, None

    def deliver_one(self, record: Record) -> None:
        if not self.delivery.positions.unseen([record]):
            return
        self.delivery.in_flight = [record]
        self.delivery.positions.hand_over([record])
        _, error = self.attempt(deliver, self.delivery.tracker, record)
        self.delivery.in_flight = []
        if self.delivery.abandoned:
            self.delivery.mark_stored_after_abandon([record] if error is None else [])
            return
        if error is None:
            self.delivery.mark_stored([record])
        elif isinstance(error, ImportError):
            self.kind_unavailable(record.kind, error, [record])
        elif is_refusal(error):
            self.refusal_seen(error)
            what = record.payload[0] if record.kind == "table" else record.kind
            self.refuse(str(what), record, error)
            self.delivery.mark_stored([record])  # nothing of it can be stored: retrying would fail the same way
        else:
            self.delivery.outage.failed(error, record.kind, [record])

    def attempt(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[int, BaseException | None]:
        """Call into the backend; returns (entries stored before a failure, the failure or None)."""
        try:
            with self.delivery.in_backend():
                function(*args, **kwargs)
        except PartialDelivery as partial:
            return partial.delivered, partial.__cause__ or partial
        except BaseException as error:
            if (
                isinstance(error, (KeyboardInterrupt, SystemExit))
                and threading.current_thread() is threading.main_thread()
            ):
                raise
            return 0, error
        return 0, None

    def refuse(self, key: str, record: Record, error: BaseException) -> None:
        """The backend refused ``key``'s value in ``record``: that one point is skipped, and said so once
        per key (a warning) and once per point (``BackendReport.refused_points``)."""
        reason = f"refused by the backend ({type(error).__name__}: {error})"[:300]
        warn_once(self.delivery.name, key, f"{reason}; only this value is skipped", reason="refused")
        self.delivery.report.skipped_values[key] = reason
        self.delivery.values.refused(key, record, reason)

    def kind_unavailable(self, kind: str, error: ImportError, records: list[Record]) -> None:
        """A package ``kind`` needs is missing: never retried (it cannot come back by itself), never a
        failure of the backend; this kind is skipped from now on, with one warning and a report line."""
        reason = missing_reason(kind, error)
        self.delivery.unavailable_kinds[kind] = reason
        self.delivery.report.skipped_kinds[KIND_NAMES.get(kind, kind)] = reason
        logger.warning("backend %r: %s", self.delivery.name, reason)
        self.skip_unavailable(records)

    def skip_lacking(self, records: list[Record]) -> None:
        """Records of a kind the backend has no method for, from a journal it catches up from: skipped,
        with one warning and a report line, as a live run leaves them out for it."""
        kind = records[0].kind
        reason = self.delivery.lacking_kinds[kind]
        name = KIND_NAMES.get(kind, kind)
        if name not in self.delivery.report.skipped_kinds:
            self.delivery.report.skipped_kinds[name] = reason
            warn_once(
                self.delivery.name, KINDS[kind].method, f"{reason}; the journal's are left out", reason="capability"
            )
        self.skip_unavailable(records)

    def skip_unavailable(self, records: list[Record]) -> None:
        records = self.delivery.positions.unseen(records)
        if not records:
            return
        name = KIND_NAMES.get(records[0].kind, records[0].kind)
        self.delivery.report.skipped_records[name] = self.delivery.report.skipped_records.get(name, 0) + len(records)
        self.delivery.mark_stored(records)  # handled: nothing of them can be stored here, and nothing is retried

    def refusal_seen(self, error: BaseException) -> None:
        logger.debug("backend %r refused a value (%r); isolating it", self.delivery.name, error)
