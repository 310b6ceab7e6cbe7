"""Files a run leaves on disk and their formats: the run journal and ``run.json``.

The formats are stable: a run written by an earlier release is read, resumed and replayed by
this one. Spill journals and cursor files belong to delivery (``tracking_core.delivery``).

- ``journal``: the append-only JSON-lines run journal — format, writer, readers, summaries.
- ``manifest``: ``run.json`` — what a later process needs to continue, replay or list a run.
"""
