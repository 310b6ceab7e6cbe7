"""Every image layout users pass reaches the cell's backend as the picture it is (read back with its SDK).

One test per layout: HWC, CHW (floats in [0, 1], as ``np.random.rand(3, H, W)``), HW, NCHW and NHWC
batches, and PIL. A backend without images, or whose SDK cannot be read back locally, skips with the reason.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import tracking_core
from tracking_core import has_capability
from tracking_core.kit.adapters import to_hwc_uint8

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"
HEIGHT, WIDTH = 32, 48


def _picture(seed: int) -> np.ndarray:
    """A smooth colour picture (HWC uint8) that survives lossy encoders, different per seed."""
    rows, columns = np.mgrid[0:HEIGHT, 0:WIDTH]
    red = (rows * 255 // (HEIGHT - 1)).astype(np.uint8)
    green = (columns * 255 // (WIDTH - 1)).astype(np.uint8)
    blue = np.full((HEIGHT, WIDTH), (seed * 80) % 256, dtype=np.uint8)
    return np.stack([red, green, blue], axis=-1)


def _layouts() -> dict[str, tuple[object, list[np.ndarray]]]:
    """layout -> (what the user passes, the HW/HWC uint8 pictures that must be stored)."""
    first, second = _picture(1), _picture(2)
    grey = first[..., 0]
    layouts = {
        "hwc": (first, [first]),
        "chw": (first.transpose(2, 0, 1).astype(np.float64) / 255.0, [first]),
        "hw": (grey, [grey]),
        "nchw": (np.stack([first, second]).transpose(0, 3, 1, 2), [first, second]),
        "nhwc": (np.stack([first, second]), [first, second]),
    }
    try:
        from PIL import Image

        layouts["pil"] = (Image.fromarray(second), [second])
    except ImportError:
        pass
    return layouts


def _matches(stored: np.ndarray, expected: np.ndarray) -> bool:
    stored = to_hwc_uint8(stored).astype(np.int16)
    expected = expected.astype(np.int16)
    if stored.ndim == 3 and stored.shape[-1] == 4:  # an RGBA copy of an opaque picture
        stored = stored[..., :3]
    if expected.ndim == 2 and stored.ndim == 3:  # a grey picture stored as RGB
        expected = np.repeat(expected[..., None], 3, axis=-1)
    if stored.shape != expected.shape:
        return False
    return float(np.abs(stored - expected).mean()) < 6.0  # lossless stores give 0; JPEG stores a few levels


@pytest.mark.parametrize("layout", sorted(_layouts()))
def test_image_layout_reads_back(tmp_path, layout):
    if layout == "pil":
        pytest.importorskip("PIL")
    value, expected = _layouts()[layout]
    run = tracking_core.Dispatcher(log_with=CELL, logging_dir=tmp_path / "runs")
    run.init_trackers("layouts")
    tracker = run.get_tracker(CELL)
    if not has_capability(tracker, "log_images"):
        run.finish()
        pytest.skip(f"{CELL} stores no images")
    run.log_images({f"picture_{layout}": value}, step=3)
    report = run.finish()
    assert report.ok, str(report)
    try:
        stored = tracker.read_back_images()
    except NotImplementedError as error:
        pytest.skip(str(error))
    points = stored.get(f"picture_{layout}")
    assert points, f"nothing stored under picture_{layout}: {sorted(stored)}"
    assert [step for step, _ in points] == [3] * len(expected)
    for (_, image), picture in zip(points, expected):
        assert _matches(np.asarray(image), picture), f"{layout}: stored {np.asarray(image).shape}"
