"""Images, figures, tables and histograms in the forms ClearML's ``Logger`` takes them."""

from __future__ import annotations

import itertools
import math
import os
import tempfile
from typing import Any

from tracking_core import Histogram
from tracking_core.kit import encode_png, figure_to_png, table_rows, to_hwc_uint8


def json_cell(value: Any) -> Any:
    """A table cell ClearML's plotly JSON can hold (its reporter thread would fail on anything else)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    item = getattr(value, "item", None)  # numpy / tensor scalars
    if callable(item):
        try:
            return json_cell(item())
        except (TypeError, ValueError):
            pass
    return str(value)


def table_plot(columns: list[str] | None, data: list[list[Any]] | None) -> list[list[Any]]:
    """The header row and the rows, as ``report_table(table_plot=)`` takes a list; without ``columns`` the
    first row of ``data`` is the header, as in accelerate."""
    if not columns and data:  # accelerate: "the first entry in data will be the name of the columns"
        columns, data = [str(name) for name in data[0]], data[1:]
    columns, rows = table_rows(columns, data, None)
    return [list(columns)] + [[json_cell(cell) for cell in row] for row in rows]


def png_file(image: Any) -> str:
    """A temporary PNG file of the image (HW, HWC or CHW array, tensor, PIL), for ``report_image(local_path=)``.

    ClearML encodes arrays as JPEG (``sdk.metrics.images.format``); a PNG file is stored as it is, so the
    pixels read back are the ones logged (``lossless_images=True``). ``delete_after_upload`` removes the
    file once ClearML copied it.
    """
    handle, path = tempfile.mkstemp(prefix="tracking-clearml-", suffix=".png")
    with os.fdopen(handle, "wb") as file:
        file.write(encode_png(to_hwc_uint8(image)))
    return path


def figure_file(figure: Any, **savefig_kwargs: Any) -> str:
    """A temporary PNG file of a matplotlib figure (``savefig_kwargs`` go to ``savefig``)."""
    handle, path = tempfile.mkstemp(prefix="tracking-clearml-", suffix=".png")
    with os.fdopen(handle, "wb") as file:
        file.write(figure_to_png(figure, **savefig_kwargs))
    return path


def bars(histogram: Histogram) -> tuple[list[float], list[float]]:
    """Each bin's centre and width: one bar per bin, as wide as the bin."""
    centres = [(low + high) / 2 for low, high in itertools.pairwise(histogram.edges)]
    widths = [high - low for low, high in itertools.pairwise(histogram.edges)]
    return centres, widths
