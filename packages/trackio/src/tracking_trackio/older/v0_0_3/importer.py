"""Import the runs of trackio 0.0.3's store: one folder per run, ``<store>/<project>/<run>/run.csv`` and its
``config.json`` (read by :mod:`tracking_trackio.older.v0_0_3.reader`, never written).

The file keeps neither the step nor the time of a row: the points are numbered 0, 1, 2, ... as Trackio's
dashboard numbers the rows, carry no time, and ``not_carried`` says both.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from pathlib import Path

from tracking_core.kit import Point, SourceError, SourceRun

from . import NO_STEPS, reader

#: What a CSV run cannot hand over.
NOT_KEPT = [NO_STEPS, "the time of each point: trackio 0.0.3 kept none"]


def _points(run_csv: Path) -> Iterator[Point]:
    try:
        rows = reader.rows(run_csv)
    except (OSError, csv.Error, UnicodeDecodeError) as error:
        raise SourceError(str(run_csv), f"not a readable Trackio run file: {error}") from error
    for number, values in rows:
        for key, value in values.items():
            yield Point(key, number, value)


def read_runs(folders: Iterable[Path]) -> Iterator[SourceRun]:
    """One run per run folder (``<project>/<run>``), named after its folders as Trackio names them."""
    for folder in folders:
        run_csv = folder / reader.RUN_FILE
        try:
            config = reader.config(folder)
        except ValueError as error:
            raise SourceError(str(folder / reader.CONFIG_FILE), f"not a readable config: {error}") from error
        yield SourceRun(
            backend="trackio",
            source_id=f"{folder.parent.name}/{folder.name}",
            name=folder.name,
            project=folder.parent.name,
            config=config,
            points=_points(run_csv),
            not_carried=list(NOT_KEPT),
            location=str(run_csv),
        )
