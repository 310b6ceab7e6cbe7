"""What ``log_images``, ``log_table`` and ``log_figure`` accept, decided once for every backend.

Media is drawn or encoded later, in each backend's worker; a value no backend can take would only
fail there, once per backend, long after the call. So the dispatcher asks these functions at the
call and refuses the value with one warning and a report entry. Each returns why a value cannot be
logged, or ``None`` when it can.
"""

from __future__ import annotations

from typing import Any

_IMAGE_DTYPE_KINDS = "biuf"  # bool, signed and unsigned ints, floats
_MAX_PIXEL_INT = 255


def image_problem(value: Any) -> str | None:
    """Why ``value`` is not an image the backends can take: HW, HWC or CHW, non-empty, real numbers.

    Integer images must hold 0..255 (uint8 semantics, as PNG writers and MLflow expect); float
    images are passed on for each backend to scale as it documents.
    """
    if hasattr(value, "getpixel"):  # PIL
        size = getattr(value, "size", (1, 1))
        return None if all(size) else f"an empty image of size {tuple(size)}"
    shape = getattr(value, "shape", None)
    if shape is None:
        return f"{type(value).__name__} is not an image (use a numpy array, a tensor or a PIL image)"
    shape = tuple(shape)
    if not (len(shape) == 2 or (len(shape) == 3 and (shape[-1] in (1, 3, 4) or shape[0] in (1, 3, 4)))):
        return f"shape {shape} is not HW, HWC or CHW with 1, 3 or 4 channels"
    if 0 in shape:
        return f"an empty image of shape {shape}"
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind is not None and kind not in _IMAGE_DTYPE_KINDS:
        return f"pixels of dtype {value.dtype} are not numbers an image can hold"
    if kind in ("i", "u"):
        try:
            low, high = value.min(), value.max()
        except Exception:
            return None
        if low < 0 or high > _MAX_PIXEL_INT:
            return f"integer pixels must be 0..255, got {low}..{high} (scale to uint8, or to floats in [0, 1])"
    return None


def image_caveat(value: Any) -> str | None:
    """What a loggable image loses on the way: float pixels are read as 0..1 by every backend, so values
    outside that range are clipped (a 0..255 float image comes out white)."""
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind != "f":
        return None
    try:
        low, high = float(value.min()), float(value.max())
    except Exception:
        return None
    if low >= 0.0 and high <= 1.0:
        return None
    hint = "divide by 255, or pass uint8" if high > 1.0 and high <= 255.0 and low >= 0.0 else "scale into [0, 1]"
    return f"float pixels are read as 0..1; got {low:g}..{high:g}, stored clipped ({hint})"


def table_problem(columns: Any, data: Any, dataframe: Any) -> str | None:
    """Why a table cannot be logged: rows of different lengths, or a header that does not fit them."""
    if dataframe is not None:
        if not hasattr(dataframe, "columns"):
            return f"{type(dataframe).__name__} is not a dataframe"
        return _duplicates(list(dataframe.columns))
    if data is None or isinstance(data, (str, bytes)):
        return "data must be a list of rows"
    try:
        widths = {len(row) for row in data}
    except TypeError:
        return "every row must be a list or tuple of cells"
    if any(isinstance(row, (str, bytes)) for row in data):
        return "every row must be a list or tuple of cells, not a string"
    if len(widths) > 1:
        return f"rows have different lengths {sorted(widths)}"
    if columns is not None and widths and len(columns) not in widths:
        return f"{len(columns)} columns for rows of {widths.pop()} cells"
    return _duplicates(columns) if columns is not None else None


def _duplicates(columns: list[Any]) -> str | None:
    """Several backends store a row as a column -> value map, where a repeated name loses cells."""
    names = [str(column) for column in columns]
    repeated = sorted({name for name in names if names.count(name) > 1})
    return f"duplicate column names {repeated}" if repeated else None


def figure_problem(figure: Any) -> str | None:
    """Why ``figure`` is not a figure the backends can draw: a matplotlib figure or a plotly figure."""
    if callable(getattr(figure, "savefig", None)):  # matplotlib, or a figure that draws itself the same way
        return None
    if (type(figure).__module__ or "").startswith("plotly") and callable(getattr(figure, "to_plotly_json", None)):
        return None
    return f"{type(figure).__name__} is not a matplotlib or plotly figure"
