"""Process lifecycle: runs left open at interpreter exit, and forked children.

**Exit.** A script that ends (or dies of an uncaught exception) without ``finish()`` must still
deliver what it logged. ``atexit`` is too late: it runs after the interpreter has started shutting
threads down, and after the exit hooks the SDKs registered when they started (ClearML zips its
offline session, W&B and SwanLab close their runs), so the queues would drain into closed runs.
The hook here is registered with ``threading``'s own exit hooks, which run first, before the
interpreter waits for threads; while it runs, the shutdown flag is lowered so that an SDK still
starting up in its worker can create the threads it needs, and exit hooks registered meanwhile are
run right after (they would otherwise be skipped).

**SIGTERM.** Launchers end a job with SIGTERM: torchrun sends it to the surviving ranks as soon as
one fails, SLURM at the time limit or on ``scancel``, Kubernetes before it removes a pod. Python's
default is to die on the spot, with everything still queued for the backends. While a run is open,
and unless the application installed its own handler, SIGTERM raises ``SystemExit(143)`` in the main
thread instead: the program unwinds as after an uncaught exception, the exit hook delivers, and the
launcher still reads "ended by SIGTERM" (128 + 15). A SIGTERM that comes while a run is finishing
(``finish()`` or the exit hook) is held until the last open run has finished, so delivery is never
cut short; the launcher's SIGKILL after its grace period stays the bound. With no run open, SIGTERM
ends the process as it always does.

**Fork.** A child forked after ``init`` (``os.fork``, a ``multiprocessing`` fork pool, a DataLoader
worker) has copies of the dispatchers but none of their threads. In the child every dispatcher
becomes inert: calls return at once (one warning), nothing is written and nothing is printed; the
parent is unaffected.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import weakref
from typing import TYPE_CHECKING, Any

from ..report import FinishReport

if TYPE_CHECKING:
    from .dispatcher import Dispatcher


_runs: weakref.WeakSet[Any] = weakref.WeakSet()
_installed = False
_install_lock = threading.Lock()
_held_signal: int | None = None  # a SIGTERM that came while a run was finishing
_ending: str | None = None  # why the process is ending, when it is not a normal exit (run.json's status)


def ending() -> str | None:
    """Why the process is ending (:func:`status_of` an uncaught exception, ``"killed: SIGTERM"``), else ``None``."""
    return _ending


def status_of(kind: type[BaseException]) -> str:
    """run.json's status for a run ended by an exception of type ``kind``: Ctrl-C (``KeyboardInterrupt``) is
    a person stopping the run, ``killed: KeyboardInterrupt`` as MLflow's ``KILLED``; anything else crashed it."""
    if issubclass(kind, KeyboardInterrupt):
        return f"killed: {kind.__name__}"
    return f"crashed: {kind.__name__}"


def watch(run: Dispatcher) -> None:
    """Finish ``run`` at interpreter exit if it is still open, and make it inert in forked children."""
    _install()
    _runs.add(run)


def forget(run: Dispatcher) -> None:
    _runs.discard(run)
    global _held_signal
    if _held_signal is not None and not list(_runs):
        number, _held_signal = _held_signal, None
        raise SystemExit(128 + number)


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
        _install_sigterm()
        _install_excepthook()


def _install_excepthook() -> None:
    """Note an uncaught exception before the exit hook finishes the runs, so they end as ``crashed`` (or
    ``killed`` by Ctrl-C)."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException, trace: Any) -> None:
        global _ending
        if _ending is None:
            _ending = status_of(kind)
        previous(kind, error, trace)

    sys.excepthook = hook


def _install_sigterm() -> None:
    # Only the main thread may set handlers, and an application's own handler (or a framework's) wins.
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"):
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # not the main interpreter
        pass


def _on_sigterm(number: int, frame: Any) -> None:
    global _held_signal
    if not list(_runs):  # nothing to deliver: the default, die now
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        return
    if _finishing(frame):
        _held_signal = number  # forget() raises it once the last open run has finished
        return
    global _ending
    _ending = _ending or "killed: SIGTERM"
    raise SystemExit(128 + number)


def _finishing(frame: Any) -> bool:
    """Whether the main thread is inside a run's ``finish()`` or the exit hook (which calls it)."""
    while frame is not None:
        if frame.f_code in _FINISHING_CODE or (
            frame.f_code.co_name == "finish" and frame.f_globals.get("__name__") == "tracking_core.run.dispatcher"
        ):
            return True
        frame = frame.f_back
    return False


def _finish_open_runs() -> None:
    global _ending
    runs = list(_runs)
    if not runs:
        return
    if _ending is None:
        # The interpreter keeps the exception that ended the script in sys.last_type even when an SDK's
        # excepthook, installed after ours, failed and never called ours (Comet's reports the crash first).
        kind = getattr(sys, "last_type", None)
        if isinstance(kind, type) and issubclass(kind, BaseException) and not issubclass(kind, SystemExit):
            _ending = status_of(kind)
    hooks: list[Any] | None = getattr(threading, "_threading_atexits", None)
    known = len(hooks) if hooks is not None else 0
    shutting_down = getattr(threading, "_SHUTTING_DOWN", None)
    if shutting_down:
        threading._SHUTTING_DOWN = False  # type: ignore[attr-defined]
    try:
        for run in runs:
            try:
                _finish_at_exit(run)
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


_FINISHING_CODE = (_finish_open_runs.__code__,)


def _after_fork_in_child() -> None:
    for run in list(_runs):
        try:
            _forked(run)
        except Exception:
            pass
    _runs.clear()
    # The child has no run of its own: it ends on SIGTERM as if this library were not there (a fork
    # pool's terminate() and DataLoader's shutdown count on workers dying at once).
    try:
        if hasattr(signal, "SIGTERM") and signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (ValueError, OSError):  # forked from a thread other than the main one
        pass


def _finish_at_exit(run: Dispatcher) -> None:
    """The interpreter is exiting and ``run`` was never finished: deliver what is queued first."""
    state = run.state
    if state.report is None and state.initialized and not state.in_forked_child:
        state.at_exit = True
        run.finish()


def _forked(run: Dispatcher) -> None:
    """In a forked child: the workers are the parent's; this copy must stay out of their way."""
    state = run.state
    state.in_forked_child = True
    state.lock = threading.Lock()  # a copy of a lock the parent may have held at fork time
    state.set_workers([], [], every=[])
    state.session = None
    state.link = None  # the parent's delivery process
    state.report = FinishReport(backends={}, run_dir=str(run.run_dir) if run.run_dir else None)
