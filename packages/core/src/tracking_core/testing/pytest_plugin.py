"""pytest plugin: prints the reliability figures the session's tests tallied (``-p tracking_core.testing.pytest_plugin``).

It also turns system metrics and the run-context capture off for the test session (unless the
environment sets them): tests compare what a backend holds with what they logged, and a test of the
run context turns it on itself (``init(..., system_metrics=..., context=...)``).
"""

from __future__ import annotations

import os
from typing import Any

from .reliability import FIGURES, table


def pytest_configure(config: Any) -> None:
    os.environ.setdefault("TRACKING_SYSTEM_METRICS", "0")
    os.environ.setdefault("TRACKING_RUN_CONTEXT", "0")
    config.addinivalue_line(
        "markers", "reliability: a fault scenario that counts what it cost (points lost/duplicated)"
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FIGURES:
        terminalreporter.write_sep("=", "reliability figures (records)")
        terminalreporter.write_line(table())
