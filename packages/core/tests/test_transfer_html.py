"""``tracking compare --html`` rendered in headless Chromium, with the network off: the page draws alone.

Skipped where ``/usr/bin/chromium`` is absent. The screenshots are kept at ``TRACKING_SCREENSHOT_DIR``
(when set) for a person to look at; the tests check that the curves were painted in the runs'
colours, which a page that failed to render (or needed a fetch) would not show, and read what the
rendered page shows (the visible text of its tables and charts, through Chromium's DevTools pipe).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

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


#: What the rendered page shows: visible text only (a zero-sized or hidden element does not count).
SHOWN = """(() => {
  const shown = el => { const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
  const texts = els => [...els].filter(shown).map(el => el.textContent.trim());
  const section = id => { const el = document.getElementById(id); return el && shown(el) ? {
    heads: texts(el.querySelectorAll('tr > th:first-child')).slice(1),
    charts: [...el.querySelectorAll('svg')].filter(shown).map(svg => ({
      title: svg.querySelector('text').textContent, texts: texts(svg.querySelectorAll('text')),
      legend: [...svg.querySelectorAll('rect[height="3"] + text')].map(t => {
        const r = t.getBoundingClientRect(); return [Math.round(r.top), r.left, r.right]; }),
      top: svg.getBoundingClientRect().top + window.scrollY})),
    text: el.innerText, top: el.getBoundingClientRect().top + window.scrollY} : null; };
  return {series: section('series'), system: section('system'), text: document.body.innerText,
          svgText: texts(document.querySelectorAll('svg text')).join('\\n'),
          height: Math.ceil(document.documentElement.scrollHeight)};
})()"""


class _DevTools:
    """Headless Chromium driven over ``--remote-debugging-pipe``: NUL-separated JSON on fds 3 and 4."""

    def __init__(self, profile: Path) -> None:
        to_browser, self._commands = os.pipe()
        self._events, from_browser = os.pipe()

        def plumb() -> None:  # in the child, before exec: the pipe's ends on the fds Chromium reads
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.process = subprocess.Popen(
            [
                CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--hide-scrollbars", f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank",
            ],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=plumb, close_fds=False,
        )  # fmt: skip
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0
        self.session: str | None = None

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._events, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, wait_for: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (after the event ``wait_for``, when given)."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if self.session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        result: dict[str, Any] | None = None
        seen = wait_for is None
        while result is None or not seen:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result = reply["result"]
            elif reply.get("method") == wait_for:
                seen = True
        return result

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (OSError, RuntimeError):
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.close(self._commands)
        os.close(self._events)


def _render(page: Path, profile: Path, width: int = 1240) -> tuple[dict[str, Any], bytes]:
    """What ``page`` shows once Chromium has laid it out, and a screenshot of the whole page."""
    browser = _DevTools(profile)
    try:
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        browser.session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        browser.send("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
        browser.send("Page.enable")
        browser.send("Page.navigate", wait_for="Page.loadEventFired", url=page.as_uri())
        shown = browser.send("Runtime.evaluate", expression=SHOWN, returnByValue=True)["result"]["value"]
        browser.send(
            "Emulation.setDeviceMetricsOverride", width=width, height=shown["height"], deviceScaleFactor=1, mobile=False
        )
        shot = browser.send("Page.captureScreenshot", format="png")["data"]
    finally:
        browser.close()
    return shown, base64.b64decode(shot)


def _keep(shot: bytes, name: str) -> None:
    if os.environ.get("TRACKING_SCREENSHOT_DIR"):
        (Path(os.environ["TRACKING_SCREENSHOT_DIR"]) / name).write_bytes(shot)


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="headless Chromium is not installed (/usr/bin/chromium)")
def test_compare_page_of_two_demo_runs_shows_their_series_and_says_best_only_where_it_means_something(tmp_path):
    from .test_system_samples_views import USER_KEYS, demo_run, journaled_run

    runs = [demo_run(tmp_path / "runs", 1.0), demo_run(tmp_path / "runs", 2.0, samples=3)]
    old = journaled_run(tmp_path / "runs")  # system/* records in its journal, at step 0
    from tracking_core.transfer.compare import compare_runs

    page = tmp_path / "compare.html"
    page.write_text(compare_runs([str(run) for run in [*runs, old]]).html(), encoding="utf-8")
    shown, shot = _render(page, tmp_path / "profile")
    _keep(shot, "compare-demo.png")
    series = shown["series"]
    assert [chart["title"] for chart in series["charts"]] == USER_KEYS  # one chart per key the user logged
    assert series["heads"] == [
        "lr",
        "train/loss (min is best)",
        "valid/accuracy (max is best)",
        "valid/loss (min is best)",
    ]
    assert shown["system"] is None and "system/" not in shown["text"] and "system/" not in shown["svgText"]
    assert "system samples not shown (4, 3, 3 per run)" in shown["text"]
    width, height, rows = _png_pixels(shot)
    assert (width, height) == (1240, shown["height"])
    colours = [bytes.fromhex(colour[1:]) for colour in PALETTE[:2]]
    counts = [sum(row[i : i + 3] == colour for row in rows for i in range(0, len(row), 3)) for colour in colours]
    assert all(count > 200 for count in counts), counts  # both demo runs' curves were painted
    for chart in series["charts"]:  # the legend's run labels stand apart, none written over the next
        entries = sorted(chart["legend"])
        assert len(entries) == 3 and all(a[2] < b[1] for a, b in itertools.pairwise(entries) if a[0] == b[0]), entries

    page.write_text(compare_runs([str(run) for run in [*runs, old]], system=True).html(), encoding="utf-8")
    shown, shot = _render(page, tmp_path / "profile")
    _keep(shot, "compare-demo-system.png")
    series, system = shown["series"], shown["system"]
    assert [chart["title"] for chart in series["charts"]] == USER_KEYS
    assert "system/" not in series["text"]
    assert [chart["title"] for chart in system["charts"]] == ["system/cpu.percent", "system/memory.used_gb"]
    assert system["top"] > max(chart["top"] for chart in series["charts"])  # a section of its own, below
    assert all("seconds since the run started" in chart["texts"] for chart in system["charts"])
    assert all("step" not in chart["texts"] for chart in system["charts"])
    assert "is best" not in system["text"] and system["heads"] == ["system/cpu.percent", "system/memory.used_gb"]
