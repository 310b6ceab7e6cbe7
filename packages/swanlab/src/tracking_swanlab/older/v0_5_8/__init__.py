"""SwanLab 0.5.8 to 0.6.1: no offline mode, so a run without an account is written in SwanLab's local mode.

These releases know ``disabled``, ``cloud``, ``cloud-only`` and ``local`` (``offline`` came in 0.6.2).
``local`` writes the run without the network and without a server process, but through SwanLab's
dashboard package, ``swanboard`` (exactly 0.1.8b1, which does not bound peewee and fails its first write
with peewee 4): each run folder ``<logdir>/run-<time>-<id>/`` holds ``logs/<column>/<n>.log`` (one JSON
line per point), ``media/<column>/`` and ``files/config.yaml``, and one SQLite database per log folder,
``<logdir>/runs.swanlab``, names the project, the experiments and each column's folder. The rest of this
line is the 0.6.2 line's (no ``swanlab.sdk``, flat settings, ``logdir``): :mod:`tracking_swanlab.older.v0_6_2`
starts the run, with ``"local"`` as the mode without an account; what only this line does is here:

* :mod:`.dependencies` -- swanboard and peewee checked before a local start, one error naming the command;
* :mod:`.run` -- :class:`~.run.LocalRun`: the experiment name the store kept (it renames a taken one
  ``<name>-1``), and a flush that fsyncs the files SwanLab wrote (it writes them before ``log`` returns);
* :mod:`.startup` -- the start, and the warning and note when the store renamed the run;
* :mod:`.reader` -- a run folder read back with swanboard's models and its own log-file reader;
* :mod:`.importer` -- the store as an import source (``tracking import swanlab``).
"""

from __future__ import annotations

import importlib.util

#: The database swanboard keeps in each log folder, beside the run folders.
DATABASE = "runs.swanlab"


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package that does not exist
        return False


def in_use() -> bool:
    """Whether the installed SwanLab writes a run without an account only in local mode: it is of the
    line before ``swanlab.sdk`` and has a local-mode callback but no offline one."""
    return (
        not _found("swanlab.sdk")
        and _found("swanlab.data.callbacker.local")
        and not _found("swanlab.data.callbacker.offline")
    )
