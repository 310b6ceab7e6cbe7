"""A record kind a backend cannot store: an optional package is missing, or the backend has no method for it.

An ``ImportError`` from a backend's call is not an outage: retrying cannot install Pillow. Delivery
(``delivery.engine``) skips every record of that kind for that backend from then on, with one warning
that says what to install and a line in the finish report, while every other kind keeps flowing.

A backend without a kind's method (DVCLive has no ``log_table``) never gets such records from a live
run (the dispatcher leaves it out); a journal it catches up from (a replay into the run, a resume)
holds every kind, and there they are skipped the same way, with one warning and a report line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..contract.tracker import GeneralTracker

#: Module a backend imports -> the distribution that provides it, for the install hint.
_DISTRIBUTIONS = {
    "PIL": "pillow",
    "matplotlib": "matplotlib",
    "pandas": "pandas",
    "plotly": "plotly",
    "kaleido": "kaleido",
    "numpy": "numpy",
    "moviepy": "moviepy",
    "imageio": "imageio",
    "soundfile": "soundfile",
    "pyarrow": "pyarrow",
    "yaml": "pyyaml",
    "sklearn": "scikit-learn",
}

#: How the report names a record kind.
KIND_NAMES = {
    "log": "metrics",
    "images": "images",
    "table": "tables",
    "figure": "figures",
    "artifact": "artifacts",
    "artifacts": "artifact folders",
}


def install_hint(error: ImportError) -> str:
    """The command that brings what ``error`` misses, as a user types it."""
    module = (error.name or "").split(".")[0]
    if module in _DISTRIBUTIONS:
        return f"pip install {_DISTRIBUTIONS[module]}"
    if module:
        return f"pip install {module}"
    return "install the package the error names"


def missing_reason(kind: str, error: ImportError) -> str:
    """One line for the warning and the report: which kind, what is missing, how to get it."""
    what = KIND_NAMES.get(kind, kind + "s")
    cause = f"{type(error).__name__}: {error}"[:200]
    if "pip install" in str(error) and not error.name:  # the SDK's own message names the command
        return f"{what} skipped: a package they need is missing ({cause})"
    return f"{what} skipped: a package they need is missing ({cause}); {install_hint(error)}"


def lacking_kinds(tracker: GeneralTracker) -> dict[str, str]:
    """The record kinds ``tracker`` has no method for (``contract.tracker.CAPABILITIES``) -> the report's line."""
    from ..contract.tracker import CAPABILITIES, has_capability
    from ..intake.record import KINDS

    return {
        kind: f"{KIND_NAMES.get(kind, kind + 's')} skipped: {tracker.name} has no {spec.method}"
        for kind, spec in KINDS.items()
        if spec.method in CAPABILITIES and not has_capability(tracker, spec.method)
    }
