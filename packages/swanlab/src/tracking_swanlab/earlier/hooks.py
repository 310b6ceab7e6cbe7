"""The process's own hooks, kept while SwanLab 0.5.8 to 0.7.x start and finish a run.

* ``sys.excepthook``: ``swanlab.init`` installs SwanLab's handler (it finishes the run as crashed and
  prints the traceback) and the run's finish sets ``sys.__excepthook__``, which throws away the hook the
  process had -- among them the one with which this library marks a run that died of an uncaught
  exception ``crashed`` in its ``run.json``. The hook the process had is put back after each call.
* stdout: SwanLab 0.5.8 copies whatever the process prints into the run's ``console/`` folder (it
  replaces ``sys.stdout.write``) and has no setting to turn that off; 0.5.9 and later have
  ``log_proxy_type``, which the quiet defaults set to ``"none"``. On a release without that setting, the
  console recorder's ``install`` does nothing while ``swanlab.init`` runs, so the training process's
  output stays its own. SwanLab's log itself is installed as usual (its level, its banner lines).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any


def _console_recorder(swanlab: Any) -> Any:
    """SwanLab 0.5.8's console recorder, where the release has it and no setting that turns it off."""
    if "log_proxy_type" in getattr(swanlab.Settings, "model_fields", {}):
        return None  # 0.5.9 on: the quiet default log_proxy_type="none" turns the capture off
    try:
        from swanlab.log import swanlog
    except ImportError:
        return None
    recorder = getattr(swanlog, "_SwanLog__consoler", None)
    return recorder if callable(getattr(recorder, "install", None)) else None


def _without_console_capture(swanlab: Any) -> Callable[[], None]:
    recorder = _console_recorder(swanlab)
    if recorder is None:
        return lambda: None
    recorder.install = lambda *args, **kwargs: None  # the instance attribute hides the method while init runs

    def restore() -> None:
        recorder.__dict__.pop("install", None)

    return restore


@contextlib.contextmanager
def kept_process_hooks(swanlab: Any) -> Iterator[None]:
    """Around ``swanlab.init`` and the run's finish: the process's excepthook and stdout stay as they were."""
    excepthook = sys.excepthook
    restore_console = _without_console_capture(swanlab)
    try:
        yield
    finally:
        restore_console()
        sys.excepthook = excepthook
