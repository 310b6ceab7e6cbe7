"""Process mode (``delivery="process"``): the backends run in a delivery process, not the training one.

- ``link``: the training process's end — ``DeliveryLink`` (a feeder thread sending batches of records,
  a reader thread taking events, the retention buffer that lets the dispatcher take over if the
  delivery process dies).
- ``remote``: ``RemoteWorker``, what the dispatcher holds for a backend in the delivery process (also
  importable from ``link``).
- ``host``: the delivery process itself (``python -m tracking_core.process.host``): builds the trackers
  and their workers again and serves the pipe.
- ``protocol``: the messages between the two processes, as named types (``Records``, ``Flush``,
  ``Finish``; ``Ready``, ``Started``, ``Progress``, ``Safe``, ``Flushed``, ``Error``, ``Finished``).
- ``remote_view``: the values a held tracker shows in the training process, sent from its twin in the
  delivery process.
"""
