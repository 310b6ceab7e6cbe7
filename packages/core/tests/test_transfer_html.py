"""``tracking compare --html`` rendered in headless Chromium, with the network off: the page draws alone.

Skipped where ``/usr/bin/chromium`` is absent. The screenshot is kept at ``TRACKING_SCREENSHOT_DIR``
(when set) for a person to look at; the test itself checks that the curves were painted in the
runs' colours, which a page that failed to render (or needed a fetch) would not show.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from tracking_core.transfer.charts import PALETTE
from tracking_core.transfer.importing import import_runs, register_importer
from tracking_core.transfer.model import Point, SourceRun

CHROMIUM = "/usr/bin/chromium"


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB(A) rows of an 8-bit non-interlaced PNG (what Chromium writes)."""
    position, chunks = 8, b""
    width = height = color = 0
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            width, height, _depth, color = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            chunks += body
        position += 12 + length
    channels = {2: 3, 6: 4}[color]
    raw = zlib.decompress(chunks)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for row in range(height):
        kind = raw[row * (stride + 1)]
        line = bytearray(raw[row * (stride + 1) + 1 : (row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line) if channels == 3 else bytes(b for j, b in enumerate(line) if j % 4 != 3))
        previous = line
    return width, height, rows


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="headless Chromium is not installed (/usr/bin/chromium)")
def test_compare_page_renders_with_both_curves_and_the_config_diff(tmp_path):
    def read_runs(source, *, options=None):
        for index, lr in enumerate((0.1, 0.03)):
            points = [Point("train/loss", s, 2.0 / (1 + s * lr * 3), 1_764_500_000.0 + s) for s in range(200)]
            points += [Point("val/acc", s, 1 - 0.5 / (1 + s * lr), 1_764_500_000.0 + s) for s in range(0, 200, 10)]
            yield SourceRun("fake", f"run{index}", name=f"lr-{lr}", project="sweep", config={"lr": lr}, points=points)

    register_importer("fake", read_runs)
    runs = import_runs("fake", "x", logging_dir=tmp_path / "runs", progress=False).runs
    from tracking_core.transfer.compare import compare_runs

    page = tmp_path / "compare.html"
    page.write_text(compare_runs([str(run.run_dir) for run in runs]).html(), encoding="utf-8")
    shot = tmp_path / "compare.png"
    profile = tmp_path / "profile"
    subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", "--window-size=1240,900", f"--screenshot={shot}", page.as_uri(),
        ],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    if os.environ.get("TRACKING_SCREENSHOT_DIR"):
        shutil.copy(shot, Path(os.environ["TRACKING_SCREENSHOT_DIR"]) / "compare.png")
    width, height, rows = _png_pixels(shot.read_bytes())
    assert (width, height) == (1240, 900)
    colours = [bytes.fromhex(colour[1:]) for colour in PALETTE[:2]]
    counts = [sum(row[i : i + 3] == colour for row in rows for i in range(0, len(row), 3)) for colour in colours]
    assert all(count > 200 for count in counts), counts  # both runs' curves (and swatches) were painted
