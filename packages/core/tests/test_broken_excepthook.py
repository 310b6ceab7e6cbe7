"""An SDK's excepthook installed after the library's can fail before calling ours (Comet's reports the crash
first): the run still ends with the status of the exception that ended the script."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = r"""
import sys
import tracking_core
run = tracking_core.init("p", log_with=["jsonl"], logging_dir=sys.argv[1])
run.log({"loss": 1.0}, step=0)
def failing_hook(kind, error, trace):  # an SDK's hook, set after the library's, that never chains on
    raise RuntimeError("the SDK's hook broke")
sys.excepthook = failing_hook
raise KeyboardInterrupt
"""


def test_the_run_ends_killed_when_a_later_excepthook_breaks(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    (manifest,) = tmp_path.glob("p/*/run.json")
    assert json.loads(manifest.read_text())["status"] == "killed: KeyboardInterrupt", done.stderr[-2000:]
