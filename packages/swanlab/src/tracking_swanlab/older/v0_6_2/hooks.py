"""The process's own exception hook, kept while SwanLab 0.5.8 to 0.7.x start and finish a run.

``swanlab.init`` installs SwanLab's ``sys.excepthook`` (it finishes the run as crashed and prints the
traceback) and the run's finish sets ``sys.__excepthook__``, which throws away the hook the process had --
among them the one with which this library marks a run that died of an uncaught exception ``crashed`` in
its ``run.json``. The hook the process had is put back after each call.

The terminal output is recorded as SwanLab defaults it (0.5.8 copies what the process prints into the
run's ``console/`` folder; 0.5.9 on as ``log_proxy_type`` says, ``"all"`` by default): the process still
prints all of it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def kept_process_hooks() -> Iterator[None]:
    """Around ``swanlab.init`` and the run's finish: the process's excepthook stays as it was."""
    excepthook = sys.excepthook
    try:
        yield
    finally:
        sys.excepthook = excepthook
