"""Launcher tests need torch: outside the ``launch`` environment (every matrix cell) they are not collected.

``importlib.util.find_spec`` looks torch up without importing it, so a cell neither pays for the import nor
lists a skipped test. At the end of a session that ran them, the runs each job left are printed as a table.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    sys.path.insert(0, str(Path(__file__).parent))  # launch.py, readback.py, expect.py beside the tests


def pytest_terminal_summary(terminalreporter: Any) -> None:
    expect = sys.modules.get("expect")  # imported by the tests that ran, if any
    if expect is not None and expect.ROWS:
        terminalreporter.write_sep("=", "runs each job left, read back with each backend's own reader")
        terminalreporter.write_line(expect.table(expect.ROWS))
