"""What SwanLab's local mode needs besides SwanLab, checked before a local start: one clear error, not a
failure on the first ``log()``.

SwanLab 0.5.8 to 0.6.1 import ``swanboard`` for local mode and refuse any release of it but the one their
``dashboard`` extra pins (``swanboard==0.1.8b1``); swanboard 0.1.8b1 declares ``peewee`` without a bound,
and with peewee 4 its first write of a new column fails (``peewee.OperationalError: cannot commit - no
transaction is active``: it commits outside a transaction, which peewee 4 refuses). So a user installs
both, as the error says: ``pip install 'swanboard==0.1.8b1' 'peewee<4'``.
"""

from __future__ import annotations

import importlib.util
import re
from importlib import metadata

#: The swanboard release SwanLab 0.5.8 to 0.6.1 pin (their ``dashboard`` extra), when their metadata says none.
SWANBOARD = "0.1.8b1"
#: The first peewee release swanboard 0.1.8b1 cannot write with.
PEEWEE_BREAKS_AT = 4


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def wanted_swanboard() -> str:
    """The swanboard release the installed SwanLab asks for (``swanboard==<v>; extra == "dashboard"``)."""
    try:
        requirements = metadata.requires("swanlab") or []
    except metadata.PackageNotFoundError:  # reading a store where SwanLab itself is not installed
        requirements = []
    for requirement in requirements:
        found = re.match(r"\s*swanboard\s*==\s*([\w.]+)", requirement)
        if found:
            return found.group(1)
    return SWANBOARD


def install_command(swanboard: str | None = None) -> str:
    """The command that installs local mode's packages: the swanboard the installed SwanLab asks for, or ``swanboard``."""
    return f"pip install 'swanboard=={swanboard or wanted_swanboard()}' 'peewee<{PEEWEE_BREAKS_AT}'"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: blocked (None in sys.modules)
        return False


def _major(version: str) -> int:
    found = re.match(r"(\d+)", version)
    return int(found.group(1)) if found else 0


def problem() -> tuple[str, str] | None:
    """What keeps SwanLab's local mode from writing here (and the package to blame), or ``None``."""
    wanted, swanboard, peewee = wanted_swanboard(), _version("swanboard"), _version("peewee")
    if swanboard is None or not _importable("swanboard"):
        return f"swanboard is not installed (SwanLab asks for swanboard {wanted})", "swanboard"
    if swanboard != wanted:
        return f"swanboard {swanboard} is installed, and SwanLab accepts only {wanted}", "swanboard"
    if peewee is not None and _major(peewee) >= PEEWEE_BREAKS_AT:
        return f"peewee {peewee} is installed, with which swanboard {swanboard} fails its first write", "peewee"
    return None


def check() -> None:
    """Raise an ``ImportError`` that names the install command when local mode cannot write."""
    found = problem()
    if found is None:
        return
    reason, package = found
    raise ImportError(
        f"SwanLab {_version('swanlab') or '?'} writes a run without an account only in its local mode, which "
        f"stores it with swanboard and peewee: {reason}. Install them: {install_command()}",
        name=package,
    )
