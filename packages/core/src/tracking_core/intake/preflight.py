"""Checks made where the user's arguments arrive, so a mistake fails at that call and names the parameter.

Without them the same mistakes surface later and elsewhere: a ``TypeError`` from ``os.fspath`` for
``logging_dir=123``, a bare ``FileNotFoundError`` from the run manifest for a folder that cannot exist,
``'int' object is not iterable`` from copying a table, or (for a backend package installed without its
SDK) an ``ImportError`` in the backend's worker that the user only sees in the finish report.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..contract.backends_info import SDK_MODULES
from ..contract.registry import LoggerType, install_command, package_for
from ..errors import BackendNotInstalledError

#: The built-in backends (their SDK module: ``backends_info.SDK_MODULES``, by default the backend's name).
_BUILT_IN = frozenset(member.value for member in LoggerType) - {LoggerType.ALL.value}


def checked_logging_dir(logging_dir: Any) -> str | None:
    """``logging_dir`` as a string path; anything that is not a path is refused by name."""
    if logging_dir is None:
        return None
    if not isinstance(logging_dir, (str, os.PathLike)) or isinstance(os.fspath(logging_dir), bytes):
        raise TypeError(
            f"logging_dir must be a path (str or os.PathLike), got {type(logging_dir).__name__}: {logging_dir!r}"
        )
    return os.fspath(logging_dir)


def prepare_logging_dir(root: Path) -> None:
    """Create the logging directory now, or fail with the OS error's own type and a message naming it."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        reason = "it is a file" if isinstance(error, FileExistsError) else error.strerror or str(error)
        raise type(error)(error.errno, f"logging_dir {str(root)!r} cannot be created: {reason}") from error
    if not os.access(root, os.W_OK | os.X_OK):
        raise PermissionError(f"logging_dir {str(root)!r} is not writable")


def _is_row(value: Any) -> bool:
    return hasattr(value, "__iter__") and not isinstance(value, (str, bytes, dict))


def check_table_arguments(columns: Any, data: Any, dataframe: Any) -> None:
    """``log_table``'s ``columns`` and ``data`` have the shapes every backend expects, or a TypeError names them."""
    if columns is not None and not _is_row(columns):
        raise TypeError(f"log_table: `columns` must be a list of column names, got {type(columns).__name__}")
    if data is None:
        return
    if not _is_row(data):
        raise TypeError(f"log_table: `data` must be a list of rows (lists or tuples), got {type(data).__name__}")
    if isinstance(data, (list, tuple)):  # an iterator would be used up by looking at it
        for index, row in enumerate(data):
            if not _is_row(row):
                raise TypeError(
                    f"log_table: `data[{index}]` must be a row (a list or tuple of cells), got {type(row).__name__}"
                )


def _sdk_requirement(backend: str) -> str | None:
    """The SDK requirement of the installed backend package (``mlflow-skinny>=3.17``), from its metadata."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        requirements = requires(package_for(backend)) or []
    except PackageNotFoundError:
        return None
    wanted = backend.replace("_", "-").lower()
    for requirement in requirements:
        if "extra ==" in requirement:
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*?)\s*(;|$)", requirement)
        if match and re.sub(r"[._]", "-", match.group(1).lower()).startswith(wanted):
            return match.group(1) + match.group(2).replace(" ", "")
    return None


def missing_sdks(specs: Iterable[Any]) -> dict[str, str]:
    """Built-in backends among ``specs`` whose SDK cannot be found, with the command that installs it.

    Found with ``importlib.util.find_spec`` on the SDK's top-level module: nothing is imported. Only the
    classes of the backend packages themselves are checked (``tracking_mlflow.MLflowTracker``), never a
    user's own tracker class or instance, whatever its name.
    """
    import importlib.util

    missing: dict[str, str] = {}
    for spec in specs:
        name: Any = getattr(spec, "name", None)  # a user's spec may name itself anything
        module = SDK_MODULES.get(name, name)
        if name not in _BUILT_IN or module is None or not isinstance(spec, type):
            continue
        if spec.__module__.split(".")[0] != f"tracking_{name}":
            continue
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
            found = False
        if not found:
            requirement = _sdk_requirement(name)
            missing[name] = (
                f'pip install "{requirement}"'
                if requirement
                else install_command(name).replace("pip install", "pip install --force-reinstall", 1)
            )
    return missing


def check_run_can_start(specs: Iterable[Any], root: Path, writes: bool = True) -> None:
    """Before a run starts: every selected backend's SDK is installed and (where this process writes
    the run) the logging directory can be made."""
    missing = missing_sdks(specs)
    if missing:
        details = "; ".join(f"{name!r}: {command}" for name, command in missing.items())
        raise BackendNotInstalledError(
            f"The SDK of {', '.join(map(repr, missing))} is not installed (its tracking package is). Install it: {details}"
        )
    if writes:
        prepare_logging_dir(root)
