"""Image layouts a training loop hands to ``log_images``, and the check that a backend stored each as it is.

For a backend's own tests (the shared tests have ``tests/test_image_layouts.py``): log
:func:`image_layouts` through the tracker, read them back with its ``read_back_images()`` and
:func:`assert_read_back` compares every picture pixel for pixel. Needs numpy (and Pillow for the PIL cases).
"""

from __future__ import annotations

from typing import Any

from ..kit.adapters import image_list, to_hwc_uint8


def image_layouts(*, with_pil: bool = True, extra: bool = False) -> dict[str, Any]:
    """``{layout: image}``: HWC, CHW, HW, HW1, RGBA, float CHW in [0, 1], NCHW and NHWC batches, PIL.

    ``extra`` adds a one-pixel-high image (a shape some SDKs mistake for a batch).
    """
    import numpy as np

    rng = np.random.default_rng(0)
    hwc = rng.integers(0, 256, size=(16, 24, 3), dtype=np.uint8)
    layouts: dict[str, Any] = {
        "hwc": hwc,
        "chw": hwc.transpose(2, 0, 1),
        "hw": hwc[..., 0],
        "hw1": hwc[..., :1],
        "rgba": np.concatenate([hwc, np.full((16, 24, 1), 128, np.uint8)], axis=-1),
        "float_chw": rng.random((3, 16, 24)),
        "nchw": np.stack([hwc.transpose(2, 0, 1)] * 2),
        "nhwc": np.stack([hwc, hwc[::-1], hwc[:, ::-1]]),
    }
    if with_pil:
        from PIL import Image

        layouts["pil"] = Image.fromarray(hwc)
        layouts["pil_gray"] = Image.fromarray(hwc[..., 0])
    if extra:
        layouts["row"] = hwc[:1]
    return layouts


def expected_images(value: Any) -> list[Any]:
    """The single HW/HWC uint8 pictures a backend must hold for one logged value."""
    return [to_hwc_uint8(item) for item in image_list(value)]


def assert_read_back(stored: dict[str, list[tuple[int, Any]]], images: dict[str, Any], step: int) -> None:
    """Every layout came back at ``step``, each picture exactly (same shape, same pixels)."""
    import numpy as np

    assert set(stored) == set(images), (sorted(stored), sorted(images))
    for key, value in images.items():
        expected = expected_images(value)
        assert [at for at, _ in stored[key]] == [step] * len(expected), key
        for (_, got), want in zip(stored[key], expected, strict=True):
            assert got.shape == want.shape and np.array_equal(got, want), key
