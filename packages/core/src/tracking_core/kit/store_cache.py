"""New local stores start as copies of an empty store the SDK itself made once per SDK version.

MLflow and Aim create a new store by running every schema migration since their first release
(MLflow in the process, ~1.5 s; Aim in a child Python process, ~1.1 s): the first run in each new
``logging_dir`` pays it, and every test and notebook that uses a fresh folder does. For one SDK
version the result is always the same, so a backend has the SDK make one empty store into the
user's cache folder and copies it for each new store; the SDK then opens the copy as a store that
was already migrated. The backends say what their copy holds and check it with the SDK's reader.

Anything unexpected (an unwritable cache, a damaged cached store, a copy the SDK refuses) leaves the
store to the SDK, which is always correct. ``TRACKING_STORE_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

ENABLE_ENV = "TRACKING_STORE_CACHE"
#: where cached stores live when set; otherwise ``$XDG_CACHE_HOME/tracking`` or ``~/.cache/tracking``
CACHE_DIR_ENV = "TRACKING_CACHE_DIR"


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "1").strip().lower() not in {"0", "false", "no", "off"}


def cache_dir() -> Path:
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracking"


def fingerprint(*parts: str, files_in: Path | None = None) -> str:
    """A short digest of ``parts`` and the names of the ``.py`` files in ``files_in`` (an SDK's migrations)."""
    names = sorted(entry.name for entry in files_in.iterdir() if entry.suffix == ".py") if files_in else []
    return hashlib.sha256("\n".join([*parts, *names]).encode()).hexdigest()[:16]


def alembic_migrated(database: Path) -> bool:
    """A readable sqlite file that went through alembic (both SDKs migrate with it; a damaged file did not)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database.as_posix()}?mode=ro", uri=True)) as connection:
            rows: int = connection.execute("SELECT count(*) FROM alembic_version").fetchone()[0]
            return rows == 1
    except sqlite3.Error:
        return False


def cached_store(key: str, make: Callable[[Path], None], complete: Callable[[Path], bool]) -> Path:
    """The folder ``<cache>/<key>`` holding an empty store ``make(folder)`` made; made now if missing or damaged.

    Made in a scratch folder and renamed into place, so a process never sees half of one; when several
    make it at once, the first rename wins and the others use it.
    """
    root = cache_dir()
    folder = root / key
    if folder.is_dir():
        if complete(folder):
            return folder
        shutil.rmtree(folder, ignore_errors=True)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)  # the user's own: a store may hold SQL triggers
    scratch = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
    try:
        make(scratch)
        if not complete(scratch):
            raise RuntimeError(f"the SDK made an incomplete store for {key}")
        try:
            os.rename(scratch, folder)
        except OSError:
            if not (folder.is_dir() and complete(folder)):  # not another process's store
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


def copy_into_place(sources: Iterable[Path], destination: Path, *, folder: bool) -> None:
    """Copy one file to ``destination`` (``folder=False``) or files into a new folder ``destination``.

    Either appears whole or not at all: the copy is made beside it and renamed, which also refuses to
    replace anything that appeared at ``destination`` meanwhile.
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        if folder:
            for source in sources:
                shutil.copy2(source, partial / source.name)
            os.rename(partial, destination)
        else:
            (source,) = sources
            shutil.copyfile(source, partial / destination.name)
            if destination.exists():
                raise FileExistsError(destination)
            os.rename(partial / destination.name, destination)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
