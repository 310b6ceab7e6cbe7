"""How the Comet experiment ends: the crash report, and the start and stop times of an offline archive.

Comet knows an experiment as running, finished or crashed (``APIExperiment.get_state``); it has no stopped
or killed state. Its own crash handling is the ``sys.excepthook`` that ``import comet_ml`` installs: on an
uncaught exception it calls ``_report_experiment_error(message, has_crashed=True)`` on the running
experiment before ``end()``. Online that sends the error and ``hasCrashed`` to the server; offline it sets
the archive's ``customer_error_reported`` and ``customer_error_message``, which ``comet upload`` reports
as the experiment's error. This backend takes that hook out (the dispatcher ends the run once the queues are
drained, and a delivery process or a ``with`` block would never reach it), so :func:`report_end` makes the
same call from ``run_end``: a crashed or interrupted run (Ctrl-C, SIGTERM, a dead process) is reported
with the run's status (``crashed: ValueError``) as the error. Comet has no public call for it.

An offline archive keeps the experiment's ``start_time`` and ``stop_time`` (ms) in its ``experiment.json``;
``comet upload`` makes them the experiment's start and end. Comet stamps them when the worker started the
experiment and when ``end()`` ran: :func:`set_start` gives a new experiment the run's start instead, and
:func:`stamp_stop_time` puts the time the run ended into the archive ``end()`` wrote.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from tracking_core import RunEnd
from tracking_core.kit import logger

#: The name of the metadata member of Comet's offline archive.
META_FILE = "experiment.json"


def report_end(experiment: Any, end: RunEnd) -> bool:
    """Report a crashed or interrupted run as Comet's exception hook would; ``False`` when Comet has no way."""
    if end.outcome == "finished":
        return True
    report = getattr(experiment, "_report_experiment_error", None)
    if report is None:
        return False
    report(end.status, has_crashed=True)
    return True


def set_start(experiment: Any, started: float | None, appending: bool) -> None:
    """A new offline experiment starts when the run did. A part ``appending`` to an experiment keeps Comet's
    own stamp: the archives of one experiment are ordered by it, and ``comet upload`` ignores it for them."""
    if started is None or appending or not isinstance(getattr(experiment, "start_time", None), int):
        return
    experiment.start_time = min(experiment.start_time, int(started * 1000))


def stamp_stop_time(archive: Path, ended: float | None) -> None:
    """Set the archive's ``stop_time`` to when the run ended: the zip is written anew beside it and replaces it."""
    if ended is None:
        return
    temporary: str | None = None
    try:
        with zipfile.ZipFile(archive) as source:
            meta = json.loads(source.read(META_FILE))
            stop = max(int(ended * 1000), int(meta.get("start_time") or 0))
            if meta.get("stop_time") == stop:
                return
            meta["stop_time"] = stop
            handle, temporary = tempfile.mkstemp(prefix=f".{archive.name}.", dir=archive.parent)
            os.close(handle)
            with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as target:
                for info in source.infolist():
                    data = json.dumps(meta).encode() if info.filename == META_FILE else source.read(info)
                    target.writestr(info, data)
        os.replace(temporary, archive)
        temporary = None
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        logger.warning("comet_ml: the archive %s keeps Comet's own stop time (%s)", archive, error)
    finally:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
