"""Moving runs between trackers: the journal as a neutral archive.

Map of this package:

* :mod:`.model` -- what an importer reads out of a backend's store (``SourceRun`` and its parts) and
  the error it raises on a damaged source. Backend packages implement importers against it and
  register them under the ``tracking.importers`` entry-point group (``name = "pkg.module:read_runs"``).
* :mod:`.importing` -- ``tracking import``: finds the importer, streams its runs into journals,
  shows progress, reports; :func:`~.importing.register_importer` adds one in-process.
* :mod:`.writer` -- one ``SourceRun`` as a run folder (journal, ``run.json`` with ``imported_from``,
  media and artifacts copied); idempotent by the source's run identity.
* :mod:`.resolve` -- a run named by folder, journal, run id or ``project/run``.
* :mod:`.export` -- ``tracking export``: a run as CSV, JSON or Parquet, one row per step and key.
* :mod:`.compare` and :mod:`.charts` -- ``tracking compare``: text, JSON or a self-contained HTML page
  with the curves as inline SVG.
* :mod:`.commands` -- the three subcommands' arguments (``cli.py`` only registers them).

An importer never writes to its source. The round-trip test helpers are in
:mod:`tracking_core.testing.transfer`.
"""
