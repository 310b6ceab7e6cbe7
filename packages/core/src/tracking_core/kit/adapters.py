"""The conversions every backend adapter needs, written once: images, figures, tables, reachability.

A backend's ``tracker.py`` should hold only its SDK mapping. What the SDKs disagree on (image
layouts, how a figure becomes pixels, how a table's rows are read, how long to wait for a server
that does not answer) is decided here, so a fix reaches every backend at once. numpy is imported
only inside the functions that handle arrays (a process that passes arrays already has it).
"""

from __future__ import annotations

import io
import threading
from typing import Any

from ..intake.config import merge_config

__all__ = [
    "figure_to_array",
    "figure_to_png",
    "image_list",
    "merge_config",
    "probe_http",
    "table_rows",
    "to_hwc_uint8",
]

_CHANNELS = (1, 3, 4)


def _as_array(image: Any) -> Any:
    import numpy as np

    if hasattr(image, "getpixel"):  # PIL: palette, CMYK, 16-bit and other modes become RGB(A) or L
        if image.mode not in ("L", "RGB", "RGBA"):
            image = image.convert("RGBA" if "A" in image.getbands() else "RGB")
        return np.asarray(image)
    if hasattr(image, "detach") and hasattr(image, "cpu"):  # torch
        image = image.detach().cpu()
        if str(getattr(image, "dtype", "")) == "torch.bfloat16":
            image = image.float()
        return image.numpy()
    return np.asarray(image)


def _channels_last(array: Any, dataformats: str | None) -> Any:
    """HW or HWC from HW, HWC or CHW; ``dataformats`` ("CHW", "HWC", "HW") settles an ambiguous shape."""
    import numpy as np

    if dataformats is not None:
        layout = dataformats.upper()
        if sorted(layout) not in (sorted("HW"), sorted("HWC")) or len(layout) != array.ndim:
            raise ValueError(f"dataformats {dataformats!r} does not describe an image of shape {array.shape}")
        target = "HWC" if "C" in layout else "HW"
        return np.transpose(array, [layout.index(axis) for axis in target])
    if array.ndim == 3 and array.shape[0] in _CHANNELS and array.shape[-1] not in _CHANNELS:
        return np.transpose(array, (1, 2, 0))  # CHW; a shape that reads both ways is taken as HWC
    return array


def to_hwc_uint8(image: Any, dataformats: str | None = None, *, keep_channel_axis: bool = False) -> Any:
    """``image`` as a uint8 numpy array, HW for one channel and HWC for three or four.

    Accepts numpy arrays, torch tensors, PIL images and nested lists in HW, HWC or CHW layout
    (pass ``dataformats`` when a shape reads both ways). Floats whose maximum is at most 1 are
    taken as [0, 1] and scaled, other floats and ints are clipped to 0..255, NaN becomes 0, bools
    become 0/255. ``keep_channel_axis=True`` returns grey images as HxWx1 for SDKs that want 3-d.
    """
    import numpy as np

    array = _channels_last(_as_array(image), dataformats)
    if array.ndim == 3 and array.shape[-1] == 1 and not keep_channel_axis:
        array = array[..., 0]
    elif array.ndim == 2 and keep_channel_axis:
        array = array[..., None]
    channels = 1 if array.ndim == 2 else array.shape[-1]
    if array.ndim not in (2, 3) or channels not in _CHANNELS or 0 in array.shape:
        raise ValueError(f"an image must be HW, HWC or CHW with 1, 3 or 4 channels, got shape {array.shape}")
    if array.dtype == np.uint8:
        return np.ascontiguousarray(array)
    if array.dtype == np.bool_:
        return np.ascontiguousarray(array.astype(np.uint8) * 255)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"pixels of dtype {array.dtype} are not numbers an image can hold")
    values = np.nan_to_num(array.astype(np.float64), nan=0.0, posinf=255.0, neginf=0.0)
    if array.dtype.kind == "f" and values.size and float(values.max()) <= 1.0:
        values = values * 255.0
    return np.ascontiguousarray(np.clip(np.rint(values), 0, 255).astype(np.uint8))


def image_list(value: Any) -> list[Any]:
    """The single images in ``value``: a list or tuple of them, a 4-d NCHW/NHWC batch, or one image."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if getattr(value, "ndim", None) == 4:
        return list(value)
    return [value]


def figure_to_png(figure: Any, **savefig_kwargs: Any) -> bytes:
    """A matplotlib figure (``savefig_kwargs``: ``dpi``, ``bbox_inches``...) or plotly figure as PNG bytes.

    The format is always PNG: a ``format`` in the kwargs is ignored, since every caller stores PNG.
    """
    savefig_kwargs.pop("format", None)
    if hasattr(figure, "savefig"):
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", **savefig_kwargs)
        return buffer.getvalue()
    if hasattr(figure, "to_image"):  # plotly: needs its image engine (kaleido)
        png: bytes = figure.to_image(format="png")
        return png
    raise TypeError(f"{type(figure).__name__} is not a matplotlib or plotly figure")


def figure_to_array(figure: Any, **savefig_kwargs: Any) -> Any:
    """The figure rendered to PNG and decoded: an HWC uint8 array (RGB or RGBA)."""
    import numpy as np
    from PIL import Image  # matplotlib depends on Pillow; plotly's image engine needs it too

    with Image.open(io.BytesIO(figure_to_png(figure, **savefig_kwargs))) as image:
        return np.asarray(image.convert("RGBA" if "A" in image.getbands() else "RGB"))


def table_rows(columns: list[Any] | None, data: list[Any] | None, dataframe: Any) -> tuple[list[str], list[list[Any]]]:
    """Columns and rows from either ``columns``/``data`` or a pandas-like ``dataframe``."""
    if dataframe is not None:
        return [str(column) for column in dataframe.columns], dataframe.values.tolist()
    if data is None:
        raise ValueError("log_table needs `data` (with optional `columns`) or `dataframe`")
    rows = [list(row) for row in data]
    width = max((len(row) for row in rows), default=0)
    return ([str(column) for column in columns] if columns else [f"col{i}" for i in range(width)]), rows


def probe_http(url: str, timeout: float = 2.0) -> str | None:
    """``None`` when something at ``url`` answers HTTP within ``timeout`` seconds, else a one-line reason.

    Any answer counts, an error status or a TLS complaint included: the point is to fall back to
    offline fast when nothing is there, not to judge credentials (the SDK does that). The request
    runs in a daemon thread joined with a deadline, because urllib's timeout does not bound the DNS
    lookup.
    """
    import ssl  # with urllib.request, ~15 ms of imports that only online backends need
    import urllib.error
    import urllib.request

    outcome: list[str | None] = []

    def probe() -> None:
        try:
            urllib.request.urlopen(url, timeout=timeout).close()
        except urllib.error.HTTPError:
            outcome.append(None)  # 401/404/500: a server is there
        except urllib.error.URLError as error:
            reason = error.reason
            outcome.append(None if isinstance(reason, ssl.SSLError) else f"{url} is unreachable ({reason})")
        except (ssl.SSLError, ssl.CertificateError):
            outcome.append(None)
        except Exception as error:  # timeouts, resets
            outcome.append(f"{url} is unreachable ({type(error).__name__}: {error})")
        else:
            outcome.append(None)

    thread = threading.Thread(target=probe, name="tracking-http-probe", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    if not outcome:
        return f"{url} did not answer within {timeout:g} s"
    return outcome[0]
