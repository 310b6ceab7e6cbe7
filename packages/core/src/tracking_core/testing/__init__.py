"""The contract suite: tests written once that every backend (and any third-party one) runs.

A backend package subclasses :class:`TrackerContract`, names its backend and says how to read back
what its SDK wrote; pytest then runs every contract test against the real SDK::

    from tracking_core.testing import ContractRun, TrackerContract

    class TestMyBackendContract(TrackerContract):
        backend_name = "mybackend"

        def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
            ...  # open what the SDK wrote under run.logging_dir with the SDK's own reader

The contract requires pytest (core's ``testing`` extra; from a clone, ``pip install './packages/core[testing]'``).
Helpers for a backend's own tests that need no pytest: :mod:`.resume` (a tracker started with a saved resume state, a run killed
with SIGKILL), :mod:`.reliability` (counting what a fault cost, running a script) and :mod:`.samples` (the
system samples every backend's ``log_system_metrics`` test logs, and the run that logs them).
"""

from typing import TYPE_CHECKING, Any

from .memory import MemoryTracker

if TYPE_CHECKING:
    from .contract import ContractRun, TrackerContract
    from .resume import started_tracker, state_of_a_killed_run
    from .samples import SAMPLES, T0, SampledRun, run_steps_and_samples

__all__ = [
    "SAMPLES",
    "T0",
    "ContractRun",
    "MemoryTracker",
    "SampledRun",
    "TrackerContract",
    "run_steps_and_samples",
    "started_tracker",
    "state_of_a_killed_run",
]


def __getattr__(name: str) -> Any:
    # The contract needs pytest; MemoryTracker does not, so import the contract (and the resume helpers) on first use.
    if name in ("ContractRun", "TrackerContract"):
        from . import contract

        return getattr(contract, name)
    if name in ("started_tracker", "state_of_a_killed_run"):
        from . import resume

        return getattr(resume, name)
    if name in ("SAMPLES", "T0", "SampledRun", "run_steps_and_samples"):
        from . import samples

        return getattr(samples, name)
    raise AttributeError(name)
