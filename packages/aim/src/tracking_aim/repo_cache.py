"""A new Aim repo starts with the run database Aim migrated once (``tracking_core.kit.store_cache``).

Aim creates a repo's ``.aim`` folder and migrates its sqlite run database with alembic in a child
Python process: ~1.1 s of the first run in each new ``logging_dir``. The cached repo is made by Aim's
own ``Repo.from_path(init=True)``; a new repo gets a copy of its ``run_metadata.sqlite`` and of the
``VERSION`` Aim wrote, and Aim makes everything else itself when the run opens (its RocksDB
containers, each with an identity of its own).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from tracking_core.kit import store_cache

AIM_FOLDER = ".aim"
COPIED = ("run_metadata.sqlite", "VERSION")


def _key() -> str:
    import aim.storage.migrations as migrations
    from aim.__version__ import __version__ as version

    versions = Path(migrations.__file__).parent / "versions"
    return f"aim-{version}-{store_cache.fingerprint(sqlite3.sqlite_version, files_in=versions)}"


def _make(folder: Path) -> None:
    from aim.sdk.repo import Repo

    Repo.from_path(str(folder), init=True).close()


def _complete(folder: Path) -> bool:
    made = folder / AIM_FOLDER
    return (made / "VERSION").is_file() and store_cache.alembic_migrated(made / "run_metadata.sqlite")


def seed_repo(repo: Path) -> bool:
    """Give ``repo`` a migrated ``.aim`` when it has none; True when it did.

    The caller holds the repo's creation lock, so no other process is creating it meanwhile.
    """
    if (repo / AIM_FOLDER).exists() or not store_cache.enabled():
        return False
    try:
        cached = store_cache.cached_store(_key(), _make, _complete) / AIM_FOLDER
        store_cache.copy_into_place([cached / name for name in COPIED], repo / AIM_FOLDER, folder=True)
        return True
    except Exception:  # no copy is always correct: Aim creates the repo as it would
        return False


def unseed(repo: Path) -> None:
    """Remove a copy Aim refused, so that Aim creates the repo itself."""
    shutil.rmtree(repo / AIM_FOLDER, ignore_errors=True)
