"""SwanLab 0.6.2 to 0.7.x, the SDK line before ``swanlab.sdk``: its own start, writer flush and store reader.

SwanLab 0.8 rewrote the SDK (``swanlab.sdk``: per-run ``Run`` objects, protobuf records in
``run-<id>.swanlab``). The releases before it that this backend supports write an offline run as
``run-<time>-<id>/backup.swanlab`` -- a log of JSON records (``Header``, ``Project``, ``Experiment``,
``Column``, ``Scalar``, ``Media``, ``Runtime``, ``Log``, ``Footer``) that ``swanlab sync`` uploads and
SwanLab's own ``DataStore`` reads -- beside ``media/`` and ``files/config.yaml``. The tracker picks this
line when the installed SwanLab has no ``swanlab.sdk`` package (:func:`in_use`); what it then does
differently is here, one module per job:

* :mod:`.startup` -- ``swanlab.init`` with this line's arguments and settings (``logdir``, ``mode="offline"``,
  the quiet defaults as ``swanlab.Settings`` fields), and what the line lacks: it cannot continue a run
  offline (a resumed job writes a new SwanLab run and the report says how to upload both into one),
  and before 0.7.0 it has no run groups.
* :mod:`.run` -- :class:`~.run.EarlierRun`, the SwanLab run behind the few names the tracker calls
  (``log``, ``config``, ``save``, ``finish``, ``alive``, ``dir``, ``id``, ``name``, ``mode``).
* :mod:`.durability` -- a flush that waits for the run's single writer thread and fsyncs its file.
* :mod:`.reader` -- a run folder read back with SwanLab's ``DataStore`` and record models.

Releases before 0.6.2 have no offline mode at all (see the package README, "SDK versions").
"""

from __future__ import annotations

import importlib.util


def in_use() -> bool:
    """Whether the installed SwanLab is this line or an older one (0.5.8 to 0.7.x): it has no ``swanlab.sdk`` package."""
    return importlib.util.find_spec("swanlab.sdk") is None
