"""A record kind a backend cannot store because an optional package is missing.

An ``ImportError`` from a backend's call is not an outage: retrying cannot install Pillow. Delivery
(``delivery.engine``) skips every record of that kind for that backend from then on, with one warning
that says what to install and a line in the finish report, while every other kind keeps flowing.
"""

from __future__ import annotations

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
KIND_NAMES = {"log": "metrics", "images": "images", "table": "tables", "figure": "figures"}


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
