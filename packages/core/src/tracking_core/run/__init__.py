"""The run: the object a script holds (``tracking_core.init`` returns it) and the life of that run.

- ``dispatcher``: ``Dispatcher`` and ``init`` — option checks, run set-up, the hot path ``log``, the
  other ``log_*`` calls, direct calls on held trackers, flush and finish.
- ``session``: ``RunSession`` — the run's folder and ``run.json``, a new or resumed run, where each
  backend carries on; cursor files.
- ``rendezvous``: per-rank runs — how every rank learns the run id rank 0 chose.
- ``lifecycle``: runs left open at interpreter exit, SIGTERM, forked children.
"""
