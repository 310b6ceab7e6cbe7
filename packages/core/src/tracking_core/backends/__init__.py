"""Backends that ship with the core.

- ``jsonl``: ``JsonlTracker``, the default backend, which writes the run journal
  (entry point ``tracking_core.backends.jsonl:JsonlTracker``). The spill journals are written through it too.

Every other backend is its own package (``tracking-tensorboard``, ``tracking-mlflow``, ...), found
through the ``tracking.backends`` entry points.
"""
