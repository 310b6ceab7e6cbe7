"""The contract suite: tests written once that every backend (and any third-party one) runs.

A backend package subclasses :class:`TrackerContract`, names its backend and says how to read back
what its SDK wrote; pytest then runs every contract test against the real SDK::

    from tracking_core.testing import ContractRun, TrackerContract

    class TestMyBackendContract(TrackerContract):
        backend_name = "mybackend"

        def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
            ...  # open what the SDK wrote under run.logging_dir with the SDK's own reader

Requires pytest (``pip install tracking-core[testing]``).
"""

from typing import TYPE_CHECKING, Any

from .memory import MemoryTracker

if TYPE_CHECKING:
    from .contract import ContractRun, TrackerContract

__all__ = ["ContractRun", "MemoryTracker", "TrackerContract"]


def __getattr__(name: str) -> Any:
    # The contract needs pytest; MemoryTracker does not, so import the contract on first use.
    if name in ("ContractRun", "TrackerContract"):
        from . import contract

        return getattr(contract, name)
    raise AttributeError(name)
