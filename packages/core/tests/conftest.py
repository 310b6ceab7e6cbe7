import pytest
from tracking_core.contract import registry
from tracking_core.notices import reset_warnings
from tracking_core.testing import MemoryTracker


@pytest.fixture(autouse=True)
def _fresh_state():
    """Each test starts with no registered classes and no remembered warnings."""
    saved = dict(registry._registered)
    reset_warnings()
    MemoryTracker.runs.clear()
    yield
    registry._registered.clear()
    registry._registered.update(saved)
    reset_warnings()


@pytest.fixture
def memory():
    registry.register_tracker_class(MemoryTracker)
    return MemoryTracker
