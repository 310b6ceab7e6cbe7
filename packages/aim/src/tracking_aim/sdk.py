"""Aim's classes, imported safely from a worker thread, and the storage chores Aim leaves to its caller."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from tracking_core.kit import notice


class Sdk(NamedTuple):
    Run: type
    Repo: type
    Text: type
    Image: type
    Figure: type
    Distribution: type


def load_sdk() -> Sdk:
    """Aim's classes from their own modules, tolerating other threads importing aim at the same moment.

    When two threads wait on each other's module locks (``import aim`` in one, ``import
    aim.storage.context`` in another), Python fails one of the imports (``_DeadlockError``, or
    ``ImportError`` on a half-initialised module), and ``aim/__init__``'s ``from aim.sdk import *``
    may then leave the ``aim`` namespace without ``Run`` for good. The defining modules are complete
    once imported, so they are imported directly, again after a short wait if a cycle broke the import.
    """
    for attempt in range(5):
        try:
            from aim.sdk.objects.distribution import Distribution
            from aim.sdk.objects.figure import Figure
            from aim.sdk.objects.image import Image
            from aim.sdk.objects.text import Text
            from aim.sdk.repo import Repo
            from aim.sdk.run import Run

            return Sdk(Run, Repo, Text, Image, Figure, Distribution)
        except (ImportError, RuntimeError) as error:
            if attempt == 4 or not (isinstance(error, ImportError) or type(error).__name__ == "_DeadlockError"):
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def drain_tracking_thread(run: Any) -> None:
    """Wait for Aim's optional tracking thread (``__AIM_ENABLE_TRACKING_THREAD__``) to store its backlog.

    ``Run.close`` does not wait for it: the thread then writes to the closed run, fails to reopen its
    database (RocksDB lock), and the interpreter hangs at exit waiting for that queue.
    """
    backlog = getattr(getattr(run.repo, "tracking_queue", None), "_queue", None)
    if backlog is not None:
        backlog.join()


def run_containers(repo: Any, run_hash: str) -> Iterator[Any]:
    """The RocksDB containers of one run (``<repo>/.aim/{meta,seqs}/chunks/<hash>``) that ``repo`` holds open.

    Found by path: Aim 3.18 pools them as ``ContainerConfig("meta/chunks/<hash>", None, ...)``, later
    releases as ``ContainerConfig("meta", "<hash>", ...)``. A remote repo holds none.
    """
    seen: set[int] = set()
    for pool_name in ("container_pool", "container_view_pool", "persistent_pool"):
        pool = getattr(repo, pool_name, None) or {}
        for container in list(pool.values()):
            path = getattr(container, "path", None)
            if id(container) in seen or path is None or Path(path).name != run_hash:
                continue
            if Path(path).parent.name == "chunks":
                seen.add(id(container))
                yield container


def release_run(repo: Any, run_hash: str) -> None:
    """Close the run's containers in this process and take them out of the repo's pools, after ``Run.close``.

    ``Run.close`` drops the run's own references but leaves the containers open until garbage
    collection, each holding its RocksDB handle and so the database's ``LOCK``: another process cannot
    reopen the run meanwhile. ``RocksContainer.close`` flushes and lets go of the handle (RocksDB closes
    the database with it); a container asked for again afterwards is opened anew.
    """
    released = list(run_containers(repo, run_hash))
    for container in released:
        container.close()
    for pool_name in ("container_pool", "container_view_pool", "persistent_pool"):
        pool: dict[Any, Any] = getattr(repo, pool_name, None) or {}
        for config, container in list(pool.items()):
            if any(container is closed for closed in released):
                pool.pop(config, None)


def index_run(repo_path: str, run_hash: str) -> None:
    """Put one closed run into the repo's index, as ``RepoIndexManager.index`` (``aim storage reindex``)
    does, without the manager's file-watcher thread. Skipped when another process (``aim up``) holds
    the index: that process indexes the run itself.
    """
    writer = load_sdk().Repo(repo_path)  # a private Repo object, so its index container is closed below
    try:
        index = writer._get_index_tree("meta", 0).view(())
        meta = writer.request_tree("meta", run_hash, read_only=True, skip_read_optimization=True).subtree("meta")
        meta.subtree("chunks").subtree(run_hash).finalize(index=index)
    except Exception as error:
        notice(f"aim: could not index run {run_hash} ({type(error).__name__}: {error}); reading the index as it is")
    finally:
        for container in list(writer.container_pool.values()):
            container.close()
