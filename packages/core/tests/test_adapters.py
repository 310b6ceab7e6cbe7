"""``tracking_core.kit.adapters``: the conversions every backend shares."""

from __future__ import annotations

import http.server
import socket
import threading

import numpy as np
import pytest
from tracking_core.kit.adapters import figure_to_array, figure_to_png, image_list, probe_http, to_hwc_uint8

RED_HWC = np.zeros((6, 8, 3), dtype=np.uint8)
RED_HWC[..., 0] = 255


@pytest.mark.parametrize(
    ("image", "dataformats"),
    [
        (RED_HWC, None),
        (RED_HWC.transpose(2, 0, 1), None),  # CHW
        (RED_HWC.astype(np.float32) / 255.0, None),  # float [0, 1]
        (RED_HWC.transpose(2, 0, 1).astype(np.float64) / 255.0, None),
        (RED_HWC.tolist(), None),
        (RED_HWC.astype(np.int64), None),
        (RED_HWC.transpose(2, 0, 1), "CHW"),
    ],
    ids=["hwc-uint8", "chw-uint8", "hwc-float", "chw-float", "nested-list", "hwc-int64", "chw-explicit"],
)
def test_colour_layouts_become_hwc_uint8(image, dataformats):
    result = to_hwc_uint8(image, dataformats)
    assert result.dtype == np.uint8 and result.shape == (6, 8, 3)
    assert (result == RED_HWC).all()


def test_grey_images_are_hw_unless_asked_for_a_channel_axis():
    grey = np.full((4, 5), 0.5)
    assert to_hwc_uint8(grey).shape == (4, 5) and to_hwc_uint8(grey)[0, 0] == 128
    assert to_hwc_uint8(grey[None]).shape == (4, 5)  # 1HW
    assert to_hwc_uint8(grey[..., None]).shape == (4, 5)  # HW1
    assert to_hwc_uint8(grey, keep_channel_axis=True).shape == (4, 5, 1)
    assert to_hwc_uint8(np.array([[True, False]])).tolist() == [[255, 0]]


def test_rgba_pil_and_odd_values():
    pil = pytest.importorskip("PIL.Image")
    image = pil.new("RGBA", (8, 6), (0, 255, 0, 128))
    assert to_hwc_uint8(image).shape == (6, 8, 4)
    assert to_hwc_uint8(pil.new("P", (3, 2))).shape == (2, 3, 3)
    odd = np.array([[np.nan, 2.0, 300.0, -4.0]])
    assert to_hwc_uint8(odd).tolist() == [[0, 2, 255, 0]]


@pytest.mark.parametrize("shape", [(2, 3, 5), (0, 4), (2, 2, 2, 2)])
def test_shapes_that_are_not_images_are_refused(shape):
    with pytest.raises(ValueError, match="HW, HWC or CHW"):
        to_hwc_uint8(np.zeros(shape))


def test_image_list_splits_batches_only():
    batch = np.zeros((3, 4, 4, 3))
    assert len(image_list(batch)) == 3
    assert len(image_list([RED_HWC, RED_HWC])) == 2
    assert image_list(RED_HWC)[0] is RED_HWC


def test_figures_render_to_png_whatever_format_is_asked():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(2, 1), dpi=50)
    axes.plot([0, 1], [1, 0])
    data = figure_to_png(figure, format="svg", dpi=50)
    assert data.startswith(b"\x89PNG")
    assert figure_to_array(figure, dpi=50).shape[:2] == (50, 100)
    plt.close(figure)
    with pytest.raises(TypeError, match="not a matplotlib or plotly figure"):
        figure_to_png(object())


def test_probe_http_tells_a_server_from_nothing():
    class Quiet(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert probe_http(f"http://127.0.0.1:{server.server_port}/ping", timeout=2.0) is None
    finally:
        server.shutdown()
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    reason = probe_http(f"http://127.0.0.1:{port}/", timeout=1.0)
    assert reason is not None and "unreachable" in reason
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts the connection, never answers
    try:
        reason = probe_http(f"http://127.0.0.1:{silent.getsockname()[1]}/", timeout=0.5)
        assert reason is not None
    finally:
        silent.close()
