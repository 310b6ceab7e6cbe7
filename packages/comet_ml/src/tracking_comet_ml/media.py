"""Images, histograms and tables in the forms Comet's calls take them."""

from __future__ import annotations

import csv
import io
import itertools
import os
from typing import Any

from tracking_core import Histogram
from tracking_core.kit import encode_png, table_rows, to_hwc_uint8


def image_bytes(image: Any) -> Any:
    """What ``log_image`` gets: a file path as is, anything else as PNG bytes of its HW/HWC uint8 pixels.

    Comet's own array conversion fails on constant images with numpy 2 and reads CHW as HWC; PNG bytes
    are unambiguous.
    """
    if isinstance(image, (str, os.PathLike)):
        return image
    return io.BytesIO(encode_png(to_hwc_uint8(image)))


def comet_histogram(comet_ml: Any, histogram: Histogram) -> Any:
    """A ``comet_ml.Histogram`` holding the counts at their bin centres (Comet bins on its own log scale)."""
    edges = histogram.edges
    centres = [(low + high) / 2 for low, high in itertools.pairwise(edges)]
    filled = [(centre, count) for centre, count in zip(centres, histogram.counts) if count]
    result = comet_ml.Histogram()
    if filled:
        result.add([centre for centre, _ in filled], counts=[round(count) for _, count in filled])
    return result


def table_csv(columns: list[str] | None, data: list[list[Any]] | None, dataframe: Any) -> io.BytesIO:
    """The table as the CSV file ``log_table`` writes (a header row, then the rows), in memory."""
    columns, rows = table_rows(columns, data, dataframe)
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(columns)
    writer.writerows(rows)
    return io.BytesIO(text.getvalue().encode("utf-8"))
