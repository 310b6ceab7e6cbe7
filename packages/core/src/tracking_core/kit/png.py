"""Write and read 8-bit PNG files without third-party packages (journal images, replay)."""

from __future__ import annotations

import os
import struct
import zlib
from typing import Any


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def image_to_rows(image: Any) -> tuple[int, int, int, bytes]:
    """(height, width, channels, raw uint8 bytes) of a numpy HW/HWC/CHW array or a PIL image."""
    if hasattr(image, "getpixel"):  # PIL
        mode = {"L": 1, "RGB": 3, "RGBA": 4}.get(image.mode)
        if mode is None:
            image = image.convert("RGB")
            mode = 3
        width, height = image.size
        return height, width, mode, image.tobytes()
    import numpy as np

    from .adapters import to_hwc_uint8

    array = to_hwc_uint8(image)
    channels = 1 if array.ndim == 2 else array.shape[-1]
    return array.shape[0], array.shape[1], channels, np.ascontiguousarray(array).tobytes()


def encode_png(image: Any) -> bytes:
    height, width, channels, raw = image_to_rows(image)
    color_type = {1: 0, 3: 2, 4: 6}[channels]
    stride = width * channels
    scanlines = b"".join(b"\x00" + raw[row * stride : (row + 1) * stride] for row in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(scanlines, 6))
        + _chunk(b"IEND", b"")
    )


def decode_png(data: bytes) -> tuple[int, int, int, bytes]:
    """Decode a PNG written by :func:`encode_png` (filter type 0 only) to (h, w, channels, bytes)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    position, idat = 8, b""
    width = height = channels = 0
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            width, height, _depth, color_type = struct.unpack(">IIBB", body[:10])
            channels = {0: 1, 2: 3, 6: 4}[color_type]
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows = []
    for row in range(height):
        start = row * (stride + 1)
        if raw[start] != 0:
            raise ValueError("only unfiltered PNG rows are supported")
        rows.append(raw[start + 1 : start + 1 + stride])
    return height, width, channels, b"".join(rows)


def load_png(path: str | os.PathLike[str]) -> Any:
    """A numpy array when numpy is installed, else the (h, w, c, bytes) tuple."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        import io

        from PIL import Image

        return Image.open(io.BytesIO(data)).copy()
    except ImportError:
        pass
    height, width, channels, raw = decode_png(data)
    import numpy as np

    array = np.frombuffer(raw, dtype=np.uint8)
    return array.reshape(height, width, channels) if channels > 1 else array.reshape(height, width)
