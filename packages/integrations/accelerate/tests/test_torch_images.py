"""Torch image tensors, in every layout a training loop produces, read back from each backend that stores images.

The backend cells have no torch; this cell has it (CPU torch 2.13.0), so the tensor layouts are proved
here, against TensorBoard, MLflow and the journal, each read back with its own reader.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tracking_core
from tracking_core.kit.adapters import to_hwc_uint8

BACKENDS = ["tensorboard", "mlflow", "jsonl"]


def _picture(seed: int) -> np.ndarray:
    rows, columns = np.mgrid[0:16, 0:24]
    return np.stack([rows * 255 // 15, columns * 255 // 23, np.full((16, 24), seed * 80 % 256)], axis=-1).astype(
        np.uint8
    )


def _layouts() -> dict[str, tuple[torch.Tensor, list[np.ndarray]]]:
    first, second = _picture(1), _picture(2)
    as_chw = torch.from_numpy(first).permute(2, 0, 1)
    return {
        "chw-float": (as_chw.float() / 255.0, [first]),  # torch.rand(3, H, W)-like
        "chw-uint8": (as_chw.contiguous(), [first]),
        "hwc": (torch.from_numpy(first), [first]),
        "hw": (torch.from_numpy(first[..., 0]).float() / 255.0, [first[..., 0]]),
        "nchw": (torch.from_numpy(np.stack([first, second])).permute(0, 3, 1, 2).float() / 255.0, [first, second]),
        "nhwc": (torch.from_numpy(np.stack([first, second])), [first, second]),
        "bf16-chw": ((as_chw.float() / 255.0).to(torch.bfloat16), [first]),
    }


def _close(stored: np.ndarray, expected: np.ndarray, tolerance: float) -> bool:
    stored = to_hwc_uint8(stored).astype(np.int16)
    if stored.ndim == 3 and stored.shape[-1] == 4:
        stored = stored[..., :3]
    expected = expected.astype(np.int16)
    if expected.ndim == 2 and stored.ndim == 3:
        expected = np.repeat(expected[..., None], 3, axis=-1)
    return stored.shape == expected.shape and float(np.abs(stored - expected).mean()) <= tolerance


@pytest.mark.parametrize("layout", sorted(_layouts()))
def test_torch_images_read_back_from_every_backend(tmp_path, layout):
    value, expected = _layouts()[layout]
    run = tracking_core.init("torch-images", log_with=BACKENDS, logging_dir=tmp_path)
    run.log_images({f"img_{layout}": value}, step=2)
    report = run.finish()
    assert report.ok, str(report)
    tolerance = 2.0 if layout.startswith("bf16") else 0.0  # bfloat16 keeps 8 bits of mantissa
    for backend in BACKENDS:
        stored = run.get_tracker(backend).read_back_images()[f"img_{layout}"]
        assert [step for step, _ in stored] == [2] * len(expected), backend
        for (_, image), picture in zip(stored, expected):
            assert _close(np.asarray(image), picture, tolerance), (backend, np.asarray(image).shape)
