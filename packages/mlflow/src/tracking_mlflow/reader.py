"""Read-back: what a run stored, read with a fresh ``MlflowClient`` (MLflow's own reader), not from memory.

Used by the tracker's ``read_back*`` methods, the tests and views.
"""

from __future__ import annotations

from typing import Any

from .names import IMAGE_FILE
from .store import local_store


def history(tracking_uri: str | None, run_id: str) -> dict[str, list[tuple[int, float]]]:
    """Every stored point of the run per metric (``get_metric_history``), as ``(step, value)``.

    Points come in the order the store returns them (by timestamp); a step logged twice shows
    twice, except an exact repeat (same step, value and timestamp), which MLflow's store keeps once.
    """
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    return {
        key: [(metric.step, metric.value) for metric in client.get_metric_history(run_id, key)]
        for key in client.get_run(run_id).data.metrics
    }


def images(tracking_uri: str | None, run_id: str) -> dict[str, list[tuple[int, Any]]]:
    """Every image ``log_image(key=, step=)`` stored, per key, as ``(step, HW or HWC uint8 array)`` in logging order.

    MLflow names each file after its key, step and timestamp (``images/<key>+step+<n>+timestamp+<ms>+<uuid>.png``,
    ``/`` in keys as ``~``; MLflow 2.x: ``%`` for ``+`` and ``#`` for ``~``).
    """
    import tempfile

    import numpy as np
    from mlflow import MlflowClient
    from PIL import Image

    client = MlflowClient(tracking_uri=tracking_uri)
    found = []
    for info in client.list_artifacts(run_id, "images"):
        match = IMAGE_FILE.match(info.path)
        if match:  # the +compressed.webp previews are skipped
            key = match["key"].replace("~", "/").replace("#", "/")
            found.append((int(match["time"]), key, int(match["step"]), info.path))
    # A local artifact store is read in place: MLflow 2.x's download refuses "#" in a path and URL-decodes
    # its "%" separators ("%20" ...), so it cannot fetch the images it named itself.
    local = local_store(client.get_run(run_id).info.artifact_uri or "")
    stored_images: dict[str, list[tuple[int, Any]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _time, key, step, path in sorted(found):
            stored = local / path if local is not None else client.download_artifacts(run_id, path, folder)
            with Image.open(stored) as image:
                stored_images.setdefault(key, []).append((step, np.asarray(image)))
    return stored_images
