"""pytest plugin: prints the reliability figures the session's tests tallied (``-p tracking_core.testing.pytest_plugin``).

It changes no default: tests run what users get, and a test that needs a quiet run asks for it in its
own call (``init(..., system_metrics=False, context=False)``).
"""

from __future__ import annotations

from typing import Any

from .reliability import FIGURES, table


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "reliability: a fault scenario that counts what it cost (points lost/duplicated)"
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FIGURES:
        terminalreporter.write_sep("=", "reliability figures (records)")
        terminalreporter.write_line(table())
