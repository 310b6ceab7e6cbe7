"""An optional package that is missing costs only the record kind that needs it (the cell's backend).

Pillow is what images need on most backends and what a plain ``pip install`` of a backend may not
bring. The script blocks it once the backend has started (an SDK that imports Pillow at start-up has
it as a hard dependency: it is there), logs metrics with images among them, then lifts the block and
reads everything back with the backend's own reader.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"

SCRIPT = """
import json, logging, sys
import numpy as np
import tracking_core

warnings = []
class Collect(logging.Handler):
    def emit(self, record):
        warnings.append(record.getMessage())
logging.getLogger("tracking").addHandler(Collect(level=logging.WARNING))

cell = sys.argv[1]
run = tracking_core.init("optional", log_with=[cell], logging_dir="runs")
run.log({"train/loss": 1.0}, step=0)
run.flush(timeout=120)
hidden = {name: module for name, module in sys.modules.items() if name == "PIL" or name.startswith("PIL.")}
for name in hidden:
    sys.modules[name] = None  # `import PIL` raises ImportError from here on, as where Pillow is not installed
sys.modules["PIL"] = None
image = np.full((8, 8, 3), 120, dtype=np.uint8)
for step in range(1, 301):
    run.log({"train/loss": 1.0 / step}, step=step)
    if step % 30 == 10:
        run.log_images({"samples": image}, step=step)
report = run.finish(timeout=120)
for name in list(sys.modules):
    if name == "PIL" or name.startswith("PIL."):
        del sys.modules[name]
sys.modules.update(hidden)
backend = report.backends[cell]
tracker = run.get_tracker(cell)
try:
    images = sum(len(v) for v in tracker.read_back_images().values())
except NotImplementedError:
    images = None
print(json.dumps({
    "state": backend.state, "spilled": backend.spilled, "dropped": backend.dropped, "errors": backend.errors,
    "skipped_kinds": backend.skipped_kinds, "skipped_records": backend.skipped_records,
    "steps": sorted(tracker.read_back_metrics().get("train/loss", {})), "images": images,
    "warnings": [w for w in warnings if "skipped" in w or "failed" in w], "report": str(report),
}))
"""


def test_a_missing_optional_package_costs_only_the_kind_that_needs_it(tmp_path):
    pytest.importorskip("numpy")
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, CELL], capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["steps"] == list(range(301)), out["report"]  # every metric arrived
    assert out["state"] == "finished" and out["spilled"] == 0 and out["dropped"] == 0, out["report"]
    if out["skipped_kinds"]:  # the backend needed Pillow for images: they, and only they, are skipped
        assert set(out["skipped_kinds"]) == {"images"}, out["skipped_kinds"]
        assert out["skipped_records"] == {"images": 10}, out["skipped_records"]
        assert "pip install" in out["skipped_kinds"]["images"]
        assert out["errors"] == 0, out["report"]
        assert len(out["warnings"]) == 1, out["warnings"]  # said once, with the install hint
        assert "10 images skipped" in out["report"]
    else:  # the backend stores images without Pillow (or its SDK already holds it): all of them are there
        assert out["images"] in (None, 10), out
        assert out["warnings"] == [], out["warnings"]
