"""The run: the object a script holds (``tracking_core.init`` returns it) and the life of that run.

- ``dispatcher``: ``Dispatcher`` and ``init`` — the public surface, the hot path ``log``, the other
  ``log_*`` calls, flush and finish; it hands the rest to their own modules:
  - ``setup``: run set-up (``init_trackers``: folder and id, per rank, trackers, workers) and building
    each backend's ``Delivery`` (``delivery_for``);
  - ``options``: ``RunOptions``, the run's options checked once; ``checked_step``;
  - ``calls``: what each ``log_*`` call checks and copies, and queuing it (``fan_out``, ``queue_config``);
  - ``managed``: direct calls on a held tracker (``run.get_tracker("x").log(...)``), ``get_tracker``;
  - ``closing``: ``finish`` (drain, close, the report) and waiting for a flush;
  - ``process_mode``: which backends go to the delivery process, starting it, and carrying on here
    when it dies.
- ``session``: ``RunSession`` — the run's folder and ``run.json``, a new or resumed run, where each
  backend carries on; cursor files.
- ``rendezvous``: per-rank runs — how every rank learns the run id rank 0 chose.
- ``lifecycle``: runs left open at interpreter exit, SIGTERM, forked children.
"""
