"""Each matrix cell holds core plus exactly one backend; the core-only cell holds no third-party dependency.

``TRACKING_BACKEND`` names the cell's backend (set by the Hatch matrix); unset means core alone.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os

import pytest
from tracking_core.contract.builtins import BUILT_INS

BACKEND_SDKS = {row.name: row.sdk for row in BUILT_INS if row.sdk is not None}
CELL = os.environ.get("TRACKING_BACKEND") or None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@pytest.mark.parametrize("backend", sorted(BACKEND_SDKS))
def test_only_the_cells_backend_is_importable(backend):
    expected = backend == CELL
    assert _importable(f"tracking_{backend}") is expected
    assert _importable(BACKEND_SDKS[backend]) is expected, (
        f"SDK {BACKEND_SDKS[backend]!r} importable={not expected} in cell {CELL or 'core'}"
    )


def test_entry_points_match_the_cell():
    from tracking_core.contract.registry import BUILT_IN_CLASSES

    entries = {entry.name: entry.value for entry in importlib.metadata.entry_points(group="tracking.backends")}
    assert set(entries) == {"jsonl"} | ({CELL} if CELL else set())
    # the registry resolves built-in names from its own table, without reading entry points: they must agree
    assert entries == {name: BUILT_IN_CLASSES[name] for name in entries}


def test_core_declares_no_third_party_dependency():
    requirements = importlib.metadata.requires("tracking-core") or []
    runtime = [r for r in requirements if "extra ==" not in r]
    assert runtime == []


def test_core_is_installed_from_the_tree_not_an_index():
    direct_url = importlib.metadata.distribution("tracking-core").read_text("direct_url.json") or ""
    assert direct_url.startswith('{"url":"file://') or '"url": "file://' in direct_url, direct_url
