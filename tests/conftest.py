"""Shared-test fixtures: subprocesses start from a clean environment."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_sdk_services(monkeypatch: pytest.MonkeyPatch):
    """W&B puts the address of its service process in ``WANDB_SERVICE`` once this test process used it; a
    subprocess inheriting it would log through this process's service, which outlives the subprocess (a
    run killed with SIGKILL would then stay open there). Each script under test gets its own."""
    monkeypatch.delenv("WANDB_SERVICE", raising=False)
