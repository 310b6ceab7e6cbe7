"""Delivery: one backend's records reach it exactly once, in order, whatever the backend does.

One ``BackendWorker`` per backend owns a queue and a thread; its ``Delivery`` decides, record by
record, what to hand the backend, what to spill, when to retry and how far the backend got.

- ``worker``: ``BackendWorker`` — the queue, the thread, the full-queue policy (``on_full``), and the
  routing of a held tracker's methods back into the dispatcher.
- ``engine``: ``Delivery`` — exactly-once hand-over, refusal isolation, spill, retry and recovery,
  catch-up of a resumed run, flush, finish and abandon.
- ``mapping``: per-backend key renames and non-finite filtering.
- ``missing``: a record kind a backend cannot store because an optional package is missing.
- ``spill``: spill journals, where records wait while a backend cannot take them, and their readers.

The names of the former module ``tracking_core.delivery`` (now ``delivery.engine``) stay importable
from this package.
"""

from .engine import *  # noqa: F403
