"""Moving runs between trackers: the journal as a neutral archive.

Map of this package:

* :mod:`.model` -- what an importer reads out of a backend's store (``SourceRun`` and its parts) and
  the error it raises on a damaged source. Backend packages implement importers against it and
  register them under the ``tracking.importers`` entry-point group (``name = "pkg.module:read_runs"``).

An importer never writes to its source. The rest of the package turns a ``SourceRun`` into a journal
(``tracking import``), a journal into CSV/JSON/Parquet (``tracking export``) and several runs into one
comparison (``tracking compare``).
"""
