"""Delivery: one backend's records reach it exactly once, in order, whatever the backend does.

One ``BackendWorker`` per backend owns a queue and a thread; its ``Delivery`` decides, record by
record, what to hand the backend, what to spill, when to retry and how far the backend got.

- ``worker``: ``BackendWorker`` — the queue, the thread, the full-queue policy (``on_full``), and the
  routing of a held tracker's methods back into the dispatcher.
- ``engine``: ``Delivery`` — one backend's delivery state, the routing of each batch, accounting
  (stored, confirmed). The parts that act on that state are objects it owns:
  - ``live``: ``Live`` — every call into the SDK; the live path; refused values isolated (halving);
  - ``recovery``: ``Outage`` — failures, retries, spill-over and the way back; ``Mode`` (live, spilling,
    recovering: the state machine); ``State``, the report's state, written only by
    ``enter``; ``RetryPolicy``; refused values vs. a backend that is down;
  - ``backlog``: ``Backlog`` — reading what the backend owes from its cursor (the catch-up first), a batch
    per tick;
  - ``flushing``: ``Flushes`` — the flush clock, a flush the backend began, the progress published;
  - ``ending``: ``Ending`` — ``finish`` and ``abandon``.
  The state it owns by concern lives beside it:
  - ``positions``: how far the backend got (durable, handed over) and the cursor file;
  - ``handover``: which thread may touch the state, and time inside the SDK;
  - ``catch_up``: what a resumed run (a replay, a take-over) missed, less what the backend's storage holds,
    read first;
  - ``spiller``: where a record waits: left in the run's journal when it holds it, else written to the
    spill journal (the config at its head, each record once, in order);
  - ``run_journal``: ``RunJournal``, how far the run's journal (written in this process) got.
- ``build``: ``build_delivery``, the one place a ``Delivery`` is built (thread mode, the delivery process,
  a take-over), from ``DeliveryOptions`` and a ``DeliveryPlan``.
- ``import_race``: a start-up that lost an import race with the training thread, retried.
- ``resume``: what a backend that started tells the run about resuming.
- ``mapping``: per-backend key renames and non-finite filtering.
- ``missing``: a record kind a backend cannot store because an optional package is missing.
- ``spill``: spill journals, where records the run's journal does not hold yet wait while a backend cannot
  take them, and ``OwedReader``, which reads what a backend owes from its cursor (the catch-up, then the journal and
  the spill merged).
"""
