"""Process lifecycle: runs left open at interpreter exit, and forked children.

**Exit.** A script that ends (or dies of an uncaught exception) without ``finish()`` must still
deliver what it logged. ``atexit`` is too late: it runs after the interpreter has started shutting
threads down, and after the exit hooks the SDKs registered when they started (ClearML zips its
offline session, W&B and SwanLab close their runs), so the queues would drain into closed runs.
The hook here is registered with ``threading``'s own exit hooks, which run first, before the
interpreter waits for threads; while it runs, the shutdown flag is lowered so that an SDK still
starting up in its worker can create the threads it needs, and exit hooks registered meanwhile are
run right after (they would otherwise be skipped).

**Fork.** A child forked after ``init`` (``os.fork``, a ``multiprocessing`` fork pool, a DataLoader
worker) has copies of the dispatchers but none of their threads. In the child every dispatcher
becomes inert: calls return at once (one warning), nothing is written and nothing is printed; the
parent is unaffected.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from typing import Any, Protocol


class _Run(Protocol):
    def _finish_at_exit(self) -> None: ...

    def _forked(self) -> None: ...


_runs: weakref.WeakSet[Any] = weakref.WeakSet()
_installed = False
_install_lock = threading.Lock()


def watch(run: _Run) -> None:
    """Finish ``run`` at interpreter exit if it is still open, and make it inert in forked children."""
    _install()
    _runs.add(run)


def forget(run: _Run) -> None:
    _runs.discard(run)


def _install() -> None:
    global _installed
    with _install_lock:
        if _installed:
            return
        _installed = True
        # Executors' own exit hook must run after ours (hooks run newest first), or SDK calls that use
        # a thread pool while the queues drain would be refused.
        import concurrent.futures.thread  # noqa: F401

        register = getattr(threading, "_register_atexit", None)
        if register is not None:
            register(_finish_open_runs)
        else:  # pragma: no cover - every supported Python has it
            atexit.register(_finish_open_runs)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)


def _finish_open_runs() -> None:
    runs = list(_runs)
    if not runs:
        return
    hooks: list[Any] | None = getattr(threading, "_threading_atexits", None)
    known = len(hooks) if hooks is not None else 0
    shutting_down = getattr(threading, "_SHUTTING_DOWN", None)
    if shutting_down:
        threading._SHUTTING_DOWN = False  # type: ignore[attr-defined]
    try:
        for run in runs:
            try:
                run._finish_at_exit()
            except BaseException:  # an exit hook must never raise
                pass
    finally:
        if shutting_down:
            threading._SHUTTING_DOWN = True  # type: ignore[attr-defined]
        if hooks is not None and len(hooks) > known:
            late = hooks[known:]
            del hooks[known:]
            for hook in reversed(late):
                try:
                    hook()
                except Exception:
                    pass


def _after_fork_in_child() -> None:
    for run in list(_runs):
        try:
            run._forked()
        except Exception:
            pass
    _runs.clear()
