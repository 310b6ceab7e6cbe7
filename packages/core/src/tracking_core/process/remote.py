"""``RemoteWorker``: what the dispatcher holds for a backend that lives in the delivery process.

It looks like an in-process ``BackendWorker`` to the dispatcher (``put``, ``join``, ``abandon``, a
report), but each call goes over the :class:`~.link.DeliveryLink`; its report and start-up state come
back as events. When the delivery process dies, the in-process worker that takes over becomes its
``replacement``. (Importable from ``process.link`` as before.)
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from ..contract.tracker import GeneralTracker
from ..delivery.recovery import enter
from ..delivery.worker import ManagedMixin
from ..report import BackendReport

if TYPE_CHECKING:
    from .link import DeliveryLink


class RemoteWorker(ManagedMixin):
    """Stands for one backend that lives in the delivery process: what the dispatcher calls a worker."""

    def __init__(self, tracker: GeneralTracker, link: DeliveryLink) -> None:
        self.tracker = tracker
        self.name = tracker.name
        self.report = BackendReport(self.name)
        self.started = threading.Event()
        self.finished = threading.Event()
        self._link = link
        self.resume_state: Any = None
        #: the in-process worker that took over when the delivery process died
        self.replacement: Any = None
        self.put = self._put

    def _put(self, record: Any) -> None:
        kind = record[0]
        if kind == "flush":  # the dispatcher waits on the record's event: the delivery process acknowledges
            self._link.flush_async(record[1], [self.name])
        elif kind == "finish":
            end = self.tracker.run_end
            self._link.finish([self.name], (end.status, end.ended))
        else:
            self._link.enqueue(record, (self.name,))

    def inside(self) -> bool:
        return False  # nothing in this process delivers to it

    def launch(self) -> None:
        pass

    def join(self, timeout: float | None) -> bool:
        # The delivery process applies the same finish timeout itself, then reports: give it time to say so.
        deadline = None if timeout is None else time.monotonic() + timeout + 10.0
        while not self.finished.wait(0.05):
            if self.replacement is not None:
                done = self.replacement.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
                if not done:
                    self.replacement.abandon()
                self.report = self.replacement.report
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
        return True

    def abandon(self) -> None:
        enter(self.report, "timed_out")
        self.report.notes.append("the delivery process did not report this backend finished in time")

    def add_note(self, note: str) -> None:
        self.report.notes.append(note)
