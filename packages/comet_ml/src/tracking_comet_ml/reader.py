"""Comet's offline archive read back: its messages, metrics and images, and an experiment's archives in order.

An offline experiment is a zip (``experiment.json`` + ``messages.json``, one JSON message per line, + the
uploaded files) that ``comet upload`` sends to a server. These helpers read the documented layout directly,
so a run can be checked without a Comet account.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any, cast

#: Comet's system metrics are named ``sys.*`` (its monitor's, and the library's samples here); Comet's UI
#: shows them apart and ``comet_ml.API.get_panel_metrics_names`` leaves them out of the user's metrics.
SYSTEM_PREFIX = "sys."
_LIBRARY_PREFIX = "system/"


def system_metric_name(key: str) -> str:
    """``system/cpu.percent`` -> ``sys.cpu.percent``: a sample of the library's sampler under Comet's prefix."""
    return SYSTEM_PREFIX + (key[len(_LIBRARY_PREFIX) :] if key.startswith(_LIBRARY_PREFIX) else key)


def sample_key(name: str) -> str:
    """``sys.cpu.percent`` -> ``system/cpu.percent``: the name a stored system series was logged under."""
    return _LIBRARY_PREFIX + (name[len(SYSTEM_PREFIX) :] if name.startswith(SYSTEM_PREFIX) else name)


def read_archive_history(path: str | os.PathLike[str], system: bool = False) -> dict[str, list[tuple[int, Any]]]:
    """``{name: [(step, value), ...]}`` from every metric message of an offline archive's ``messages.json``
    (one JSON message per line), in message order: the user's metrics, or with ``system`` the ``sys.*`` ones."""
    with zipfile.ZipFile(path) as archive:
        lines = archive.read("messages.json").decode("utf-8").splitlines()
    history: dict[str, list[tuple[int, Any]]] = {}
    for line in lines:
        message = json.loads(line) if line.strip() else {}
        if message.get("type") == "metric_msg":
            metric = message["payload"]["metric"]
            if metric["metricName"].startswith(SYSTEM_PREFIX) != system:
                continue
            history.setdefault(metric["metricName"], []).append((metric["step"], metric["metricValue"]))
    return history


def read_archive_messages(path: str | os.PathLike[str], kind: str) -> list[dict[str, Any]]:
    """The payloads of an offline archive's messages of type ``kind`` (``"git_metadata"``, ``"system_info"``,
    ``"log_dependency"``, ...), in message order."""
    with zipfile.ZipFile(path) as archive:
        lines = archive.read("messages.json").decode("utf-8").splitlines()
    messages = (json.loads(line) for line in lines if line.strip())
    return [message.get("payload") or {} for message in messages if message.get("type") == kind]


def read_archive_metrics(path: str | os.PathLike[str]) -> dict[str, dict[int, Any]]:
    """``{name: {step: value}}`` of an offline archive, the last message at a step winning."""
    return {name: dict(points) for name, points in read_archive_history(path).items()}


def read_archive_images(path: str | os.PathLike[str]) -> dict[str, list[tuple[int | None, bytes]]]:
    """``{key: [(step, image file bytes), ...]}`` of the images (and figures) in an archive, in message order.

    The key is the ``metadata["key"]`` this backend attaches, else the image name Comet shows.
    """
    with zipfile.ZipFile(path) as archive:
        members = set(archive.namelist())
        found: dict[str, list[tuple[int | None, bytes]]] = {}
        for line in archive.read("messages.json").decode("utf-8").splitlines():
            message = json.loads(line) if line.strip() else {}
            payload = message.get("payload") or {}
            if message.get("type") != "file_upload" or payload.get("upload_type") != "visualization":
                continue
            if payload.get("file_path") not in members:
                continue
            params = payload.get("additional_params") or {}
            key: Any = (payload.get("metadata") or {}).get("key") or params.get("figName")  # JSON: a str here
            found.setdefault(key, []).append((params.get("step"), archive.read(payload["file_path"])))
    return found


def archive_started(archive: Path) -> int:
    """When the archive's experiment part started (its ``experiment.json``), for ordering the parts."""
    with zipfile.ZipFile(archive) as opened:
        return int(json.loads(opened.read("experiment.json")).get("start_time") or 0)


def archives_of(directory: Path, key: str) -> list[Path]:
    """The complete archives of experiment ``key`` in ``directory``, oldest part first.

    Comet creates the archive's file when the experiment starts and fills it at ``end()``; an archive
    without ``experiment.json`` is the placeholder of a process that never ended.
    """
    found = []
    for archive in directory.glob(f"{key}*.zip"):
        try:
            found.append((archive_started(archive), archive))
        except (KeyError, zipfile.BadZipFile, OSError, ValueError):
            continue
    return [archive for _, archive in sorted(found)]


def read_history(archives: list[Path], system: bool = False) -> dict[str, list[tuple[int, Any]]]:
    """The metric messages of ``archives`` (oldest first) per name, in message order: a step stored twice shows
    twice. The user's metrics, or with ``system`` the ``sys.*`` ones."""
    history: dict[str, list[tuple[int, Any]]] = {}
    for archive in archives:
        for name, points in read_archive_history(archive, system=system).items():
            history.setdefault(name, []).extend(points)
    return history


def read_images(archives: list[Path]) -> dict[str, list[tuple[int, Any]]]:
    """Every image (and figure) of ``archives`` per key, as ``(step, HW/HWC uint8 array)``."""
    import numpy as np
    from PIL import Image  # comet_ml depends on Pillow

    images: dict[str, list[tuple[int, Any]]] = {}
    for archive in archives:
        for key, items in read_archive_images(archive).items():
            for step, data in items:
                with Image.open(io.BytesIO(data)) as image:
                    images.setdefault(key, []).append((cast(int, step), np.asarray(image).copy()))  # logged with a step
    return images
