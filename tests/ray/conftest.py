"""Ray tests run in the ``ray`` environment (``hatch run ray:run``: Ray Train and Tune over CPU torch); the
backend cells, which collect ``tests/``, have no Ray and leave them out without importing anything."""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("ray") is None:
    collect_ignore_glob = ["test_*.py"]
