"""Images handed to Trackio as PNG files, so it copies them as they are.

Given an array or a PIL image Trackio would store every image as RGBA; a PNG file written from
:func:`tracking_core.kit.to_hwc_uint8` keeps grey images grey.
"""

from __future__ import annotations

import os
from typing import Any

from tracking_core.kit import to_hwc_uint8


def write_png(image: Any, folder: str, index: int) -> str:
    """``image`` (any layout :func:`to_hwc_uint8` takes) as a PNG file in ``folder``, grey kept grey."""
    from PIL import Image

    path = os.path.join(folder, f"{index}.png")
    Image.fromarray(to_hwc_uint8(image)).save(path, format="png")
    return path


def write_png_bytes(data: bytes, folder: str, index: int) -> str:
    """PNG bytes (a rendered figure) as a file in ``folder``."""
    path = os.path.join(folder, f"{index}.png")
    with open(path, "wb") as file:
        file.write(data)
    return path
