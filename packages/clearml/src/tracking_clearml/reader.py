"""Read a ClearML offline session (the folder, or the zip ``Task.close()`` writes) without a server.

ClearML can only *import* an offline session into a server (``Task.import_offline_session``); this
reads its documented files directly: ``task.json`` (task fields, ``hyperparams``, ``configuration``),
``metrics.jsonl`` (each line a JSON list of events) and ``log.jsonl`` (console text). Used by the tests
and by anyone who wants to look at an offline run without uploading it::

    from tracking_clearml.reader import OfflineSession

    session = OfflineSession("runs/clearml/offline/offline-1234.zip")
    session.scalars()["train/loss"]         # {step: value}
    session.scalar_history()["train/loss"]  # [(step, value), ...], every event in order
    session.image_arrays()["samples"]        # [(step, HW/HWC uint8 array), ...]
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .naming import KEY_MAP_OBJECT, MONITOR_PREFIX, key_of

SINGLE_VALUE_ITERATION = -(2**31)  # where Logger.report_single_value puts its points
_TEXT_LINE = re.compile(r"^\[(?:step (-?\d+)|summary)\] (.+?): (.*)$")


class OfflineSession:
    """The contents of one offline session folder or zip."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.exists() and Path(f"{self.path}.zip").exists():
            self.path = Path(f"{self.path}.zip")

    def read_text(self, name: str) -> str:
        if self.path.is_dir():
            file = self.path / name
            return file.read_text(encoding="utf-8") if file.exists() else ""
        with zipfile.ZipFile(self.path) as archive:
            return archive.read(name).decode("utf-8") if name in archive.namelist() else ""

    def names(self) -> list[str]:
        if self.path.is_dir():
            return sorted(p.relative_to(self.path).as_posix() for p in self.path.rglob("*") if p.is_file())
        with zipfile.ZipFile(self.path) as archive:
            return sorted(archive.namelist())

    @property
    def task(self) -> dict[str, Any]:
        task: dict[str, Any] = json.loads(self.read_text("task.json") or "{}")
        return task

    def _events(self, name: str) -> Iterator[dict[str, Any]]:
        for line in self.read_text(name).splitlines():
            if line.strip():
                yield from json.loads(line)

    def events(self, kind: str | None = None) -> Iterator[dict[str, Any]]:
        """Metric events (``training_stats_scalar``, ``training_debug_image``, ``plot``), in order."""
        return (event for event in self._events("metrics.jsonl") if kind is None or event.get("type") == kind)

    # -- what the tracker wrote, in tracking's terms -----------------------------------------
    def scalars(self) -> dict[str, dict[int, float]]:
        """``{key: {step: value}}``, the key rebuilt from title/series (single values excluded); the last event
        at a step wins."""
        return {key: dict(points) for key, points in self.scalar_history().items()}

    def scalar_history(self) -> dict[str, list[tuple[int, float]]]:
        """``{key: [(step, value), ...]}`` of every scalar report event, in file order (a step reported twice
        shows twice)."""
        out: dict[str, list[tuple[int, float]]] = {}
        keys = self.key_map()
        for event in self.events("training_stats_scalar"):
            if event["iter"] != SINGLE_VALUE_ITERATION and not event["metric"].startswith(MONITOR_PREFIX):
                key = key_of(event["metric"], event["variant"], keys)
                out.setdefault(key, []).append((event["iter"], event["value"]))
        return out

    def system_scalars(self) -> dict[tuple[str, str], list[tuple[int, float]]]:
        """``{(title, series): [(iteration, value), ...]}`` of the ``:monitor:`` titles (ClearML's resource
        monitor, or the library's samples in its place), in file order; :meth:`scalar_history` leaves them out."""
        out: dict[tuple[str, str], list[tuple[int, float]]] = {}
        for event in self.events("training_stats_scalar"):
            if event["metric"].startswith(MONITOR_PREFIX):
                out.setdefault((event["metric"], event["variant"]), []).append((event["iter"], event["value"]))
        return out

    def key_map(self) -> dict[tuple[str, str], str]:
        """(title, series) -> key for the keys the naming rule alone would not give back (recorded by the tracker)."""
        stored = self.configuration(KEY_MAP_OBJECT) or []
        return {(title, series): key for title, series, key in stored}

    def single_values(self) -> dict[str, float]:
        return {
            event["variant"]: event["value"]
            for event in self.events("training_stats_scalar")
            if event["iter"] == SINGLE_VALUE_ITERATION
        }

    def texts(self) -> dict[str, dict[int | None, str]]:
        """``{key: {step: text}}`` from the ``[step N] key: value`` lines of the console log (see ``text_line``)."""
        out: dict[str, dict[int | None, str]] = {}
        for event in self._events("log.jsonl"):
            for line in str(event.get("msg", "")).split("\n"):
                match = _TEXT_LINE.match(line)
                if match:
                    step = int(match.group(1)) if match.group(1) is not None else None
                    value = match.group(3)
                    out.setdefault(match.group(2), {})[step] = json.loads(value) if value.startswith('"') else value
        return out

    def images(self) -> dict[str, list[tuple[int, str, str]]]:
        """``{key: [(step, series, file url)]}`` of debug images, in order; several images logged under one key at
        once have the series ``<series>/<index>``."""
        keys = self.key_map()
        out: dict[str, list[tuple[int, str, str]]] = {}
        for event in self.events("training_debug_image"):
            title, variant = event["metric"], event["variant"]
            series, _, index = variant.rpartition("/")
            if not (series and index.isdigit()) or (title, variant) in keys:
                series = variant
            out.setdefault(key_of(title, series, keys), []).append((event["iter"], variant, event.get("url", "")))
        return out

    def read_file(self, url: str) -> bytes | None:
        """The bytes of a file the session holds (a debug image's url), or None when it is not in the session."""
        folder_name = self.path.name.removesuffix(".zip")
        relative = url.split(f"{folder_name}/", 1)[-1] if f"{folder_name}/" in url else None
        if relative is None:
            return None
        if self.path.is_dir():
            file = self.path / relative
            return file.read_bytes() if file.is_file() else None
        with zipfile.ZipFile(self.path) as archive:
            return archive.read(relative) if relative in archive.namelist() else None

    def image_arrays(self) -> dict[str, list[tuple[int, Any]]]:
        """``{key: [(step, HW/HWC uint8 array)]}`` of the debug images whose files still hold them.

        ClearML keeps the last ``max_image_history`` files (100 by default) per title/series and reuses the
        names of older ones; an image whose file a later image of the same series overwrote is left out.
        ClearML writes the files from a pool of uploader threads, so a reused name may still hold the image
        it replaced when both writes were in flight together.
        """
        import io

        import numpy as np
        from PIL import Image  # a ClearML dependency

        events = [(key, step, url) for key, items in self.images().items() for step, _, url in items]
        last_use = {url: position for position, (_, _, url) in enumerate(events)}
        out: dict[str, list[tuple[int, Any]]] = {}
        for position, (key, step, url) in enumerate(events):
            data = self.read_file(url) if last_use[url] == position else None
            if data is not None:
                with Image.open(io.BytesIO(data)) as image:
                    out.setdefault(key, []).append((step, np.asarray(image).copy()))
        return out

    def plots(self) -> dict[str, list[tuple[int, dict[str, Any]]]]:
        """``{key: [(step, plotly dict)]}`` of plot events (tables and figures)."""
        out: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        keys = self.key_map()
        for event in self.events("plot"):
            out.setdefault(key_of(event["metric"], event["variant"], keys), []).append(
                (event["iter"], json.loads(event["plot_str"]))
            )
        return out

    def tables(self) -> dict[str, list[list[Any]]]:
        """``{table name: rows}`` of the last table logged under each name (header excluded)."""
        out: dict[str, list[list[Any]]] = {}
        for key, plots in self.plots().items():
            for _step, plot in plots:
                data = (plot.get("data") or [{}])[0]
                if data.get("type") == "table":
                    out[key] = [list(row) for row in zip(*data["cells"]["values"])]
        return out

    def table_headers(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for key, plots in self.plots().items():
            for _step, plot in plots:
                data = (plot.get("data") or [{}])[0]
                if data.get("type") == "table":
                    out[key] = [h[0] if isinstance(h, list) and len(h) == 1 else h for h in data["header"]["values"]]
        return out

    def hyperparameters(self, section: str = "General") -> dict[str, str]:
        """``{name: value}`` of a Hyperparameters section (values are strings; None was stored as "")."""
        return {name: item.get("value") for name, item in self.task.get("hyperparams", {}).get(section, {}).items()}

    def configuration(self, name: str = "General") -> Any:
        """The configuration object ``name``, parsed when it is JSON (as this tracker writes it)."""
        item = self.task.get("configuration", {}).get(name)
        if item is None:
            return None
        return json.loads(item["value"]) if item.get("type") == "json" else item.get("value")

    def artifacts(self) -> dict[str, dict[str, Any]]:
        return {item["key"]: item for item in self.task.get("execution", {}).get("artifacts", [])}
