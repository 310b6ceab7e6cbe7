"""What ``finish()`` returns: per backend, what was delivered, dropped, spilled and why."""

from __future__ import annotations

import shlex

#: refused points listed one per line in the report's text; the rest are counted
MAX_POINT_LINES = 20


class BackendReport:
    """Counts for one backend, in records (one ``log``/media/config call each).

    ``delivered``: durable in the backend's storage (counted when the backend's flush returned);
    ``spilled``: waiting (in the run's journal, or the spill journal where the journal did not hold them) and
    not delivered, i.e. what the backend still owes; ``recovered``: waited, and delivered after the backend
    failed and came back (also
    counted in ``delivered``); ``dropped``: lost (``on_full="drop"``, or the spill itself failed).

    ``state`` is one of: pending, starting, running, stuck (inside one SDK call while its queue is
    full: records wait in the spill until the call returns), retrying (failed; records wait in the spill
    until a retry gets through), quarantined (failed repeatedly, retried at longer intervals, or
    still owing records at finish), finished, start_failed, finish_failed, timed_out."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = "pending"
        self.delivered = 0
        self.dropped = 0
        self.spilled = 0
        self.errors = 0
        self.recovered = 0
        self.spill_path: str | None = None
        self.last_error: str | None = None
        self.key_map: dict[str, str] = {}
        self.skipped_values: dict[str, str] = {}
        #: One ``(key, step, reason)`` per point the backend refused (a value it says is invalid): each is a
        #: point it does not have. A backend that is down refuses nothing: its records are owed (``spilled``).
        self.refused_points: list[tuple[str, int | None, str]] = []
        #: record kinds skipped because a package they need is missing -> why (with the install hint)
        self.skipped_kinds: dict[str, str] = {}
        #: how many records of each such kind were skipped
        self.skipped_records: dict[str, int] = {}
        self.notes: list[str] = []
        #: Seconds the backend's ``start()`` took (SDK import, store creation, login...), in its worker.
        self.start_seconds: float | None = None
        #: ``time.monotonic()`` when the backend was ready to take records.
        self.ready_at: float | None = None
        #: Seconds the training loop's ``log()`` calls waited for room in this backend's queue (for a
        #: backend in the delivery process: in the queue to that process, which all its backends share).
        self.loop_waited_seconds = 0.0
        #: The library's own side records (``init(system_metrics=True, context=True)``), never counted above:
        #: system samples the backend stored and missed (a failure or an outage: they stay in system.jsonl),
        #: and whether it took the run context (``None``: it was not sent).
        self.samples = 0
        self.samples_missed = 0
        self.context_delivered: bool | None = None

    def count_side(self, kind: str, stored: bool) -> None:
        """One of the library's side records (kind ``system`` or ``context``) stored, or missed."""
        if kind == "system":
            if stored:
                self.samples += 1
            else:
                self.samples_missed += 1
        else:
            self.context_delivered = stored

    def __repr__(self) -> str:
        return (
            f"BackendReport({self.name!r}, state={self.state!r}, delivered={self.delivered}, "
            f"dropped={self.dropped}, spilled={self.spilled}, recovered={self.recovered}, errors={self.errors})"
        )

    @property
    def ok(self) -> bool:
        """Everything handed to this backend arrived and the backend closed cleanly."""
        return self.state == "finished" and self.dropped == 0 and self.spilled == 0


class FinishReport:
    """What ``Dispatcher.finish()`` returns; ``str(report)`` is a table for people."""

    def __init__(
        self,
        backends: dict[str, BackendReport],
        run_dir: str | None = None,
        rejected_values: dict[str, str] | None = None,
        notes: list[str] | None = None,
    ) -> None:
        self.backends = backends
        self.run_dir = run_dir
        self.rejected_values = rejected_values or {}
        #: lines about the run as a whole (the loop's waits for the delivery process)
        self.notes = notes or []

    def __repr__(self) -> str:
        return f"FinishReport(ok={self.ok}, backends={list(self.backends.values())!r})"

    @property
    def failed(self) -> list[str]:
        """Names of the backends that did not get everything or did not close cleanly: the ones to look at."""
        return [name for name, backend in self.backends.items() if not backend.ok]

    @property
    def ok(self) -> bool:
        """Every backend got everything and closed cleanly; a script can assert it at the end of a run."""
        return not self.failed

    def summary(self) -> str:
        """One line naming each backend that did not get everything, and how."""
        parts = []
        for name in self.failed:
            backend = self.backends[name]
            counts = [
                f"{count} {what}"
                for what, count in (("spilled", backend.spilled), ("dropped", backend.dropped))
                if count
            ]
            parts.append(f"{name} ({', '.join([backend.state, *counts])})")
        return "; ".join(parts) or "everything was delivered"

    def __str__(self) -> str:
        header = ("backend", "state", "delivered", "dropped", "spilled", "recovered", "errors", "start s")
        rows = [header] + [
            (
                b.name,
                b.state,
                str(b.delivered),
                str(b.dropped),
                str(b.spilled),
                str(b.recovered),
                str(b.errors),
                "-" if b.start_seconds is None else f"{b.start_seconds:.2f}",
            )
            for b in self.backends.values()
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * width for width in widths))
        for backend in self.backends.values():
            for note in backend.notes:
                lines.append(f"{backend.name}: {note}")
            if backend.spilled and (backend.spill_path or self.run_dir):
                # the records wait in the run's journal, and those it did not hold yet in the spill journal
                where = "the run's journal" if backend.name != "jsonl" else str(backend.spill_path)
                if backend.spill_path and backend.name != "jsonl":
                    where += f" and {backend.spill_path}"
                replay = (
                    f"tracking replay {shlex.quote(str(self.run_dir))} --to {backend.name}"
                    if self.run_dir and backend.name != "jsonl"  # the journal's own records: only in its spill
                    else f"tracking replay {backend.spill_path}"
                )
                lines.append(
                    f"{backend.name}: {backend.spilled} undelivered records in {where} "
                    f"({replay} delivers them to the same {backend.name} run)"
                )
            if backend.last_error:
                lines.append(f"{backend.name}: last error: {backend.last_error}")
            for original, renamed in backend.key_map.items():
                lines.append(f"{backend.name}: key {original!r} stored as {renamed!r}")
            for key, step, reason in backend.refused_points[:MAX_POINT_LINES]:
                lines.append(f"{backend.name}: skipped {key!r} at step {step}: {reason}")
            if len(backend.refused_points) > MAX_POINT_LINES:
                more = len(backend.refused_points) - MAX_POINT_LINES
                lines.append(f"{backend.name}: ... and {more} more refused points (BackendReport.refused_points)")
            refused = {key for key, _, _ in backend.refused_points}
            for key, reason in backend.skipped_values.items():
                if key not in refused:
                    lines.append(f"{backend.name}: skipped {key!r}: {reason}")
            for kind, reason in backend.skipped_kinds.items():
                lines.append(f"{backend.name}: {backend.skipped_records.get(kind, 0)} {reason}")
            lines.extend(f"{backend.name}: {line}" for line in _side_lines(backend))
        for key, reason in self.rejected_values.items():
            lines.append(f"all backends: skipped {key!r}: {reason}")
        lines.extend(self.notes)
        return "\n".join(lines)


def _side_lines(backend: BackendReport) -> list[str]:
    """The report's own lines for the library's side records: they are never among the user's counts."""
    lines = []
    if backend.samples or backend.samples_missed:
        missed = f", {backend.samples_missed} missed (kept in system.jsonl)" if backend.samples_missed else ""
        lines.append(f"system samples: {backend.samples} stored{missed}")
    if backend.context_delivered is not None:
        lines.append(
            "run context: stored"
            if backend.context_delivered
            else "run context: not stored (the backend failed or was down; it is in run.json)"
        )
    return lines
