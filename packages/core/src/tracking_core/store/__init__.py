"""Files a run leaves on disk and their formats: the run journal, ``run.json``, cursor files, rewinds.

The formats are stable: a run written by an earlier release is read, resumed and replayed by
this one. Spill journals belong to delivery (``tracking_core.delivery``).

- ``journal``: the append-only JSON-lines run journal — format, writer, readers, summaries, and
  ``record_from_entry`` (the record a journal line is, for a replay and a spill's catch-up).
- ``manifest``: ``run.json`` — what a later process needs to continue, replay or list a run.
- ``cursor``: ``.cursor-<backend>``, how far one backend got.
- ``owed``: what each backend of a run folder still lacks of the journal.
- ``rewind``: a resumed run rewound to a checkpoint (``resume_step``): which records it supersedes,
  and the step a rewound run stopped at.
"""
