"""Read-back of Comet's offline archive (its documented format: ``messages.json`` + ``experiment.json``)."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest
from tracking_core.notices import reset_warnings


class CometArchive:
    """One offline experiment zip, as ``comet upload`` reads it."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        with zipfile.ZipFile(self.path) as archive:
            self.members = {name: archive.read(name) for name in archive.namelist()}
        self.experiment = json.loads(self.members["experiment.json"])
        self.messages = [
            json.loads(line) for line in self.members["messages.json"].decode().splitlines() if line.strip()
        ]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [message["payload"] for message in self.messages if message["type"] == kind]

    def metrics(self) -> dict[str, dict[int, Any]]:
        found: dict[str, dict[int, Any]] = {}
        for payload in self.of_type("metric_msg"):
            metric = payload["metric"]
            found.setdefault(metric["metricName"], {})[metric["step"]] = metric["metricValue"]
        return found

    def parameters(self, source: str = "manual") -> dict[str, Any]:
        found = {}
        for payload in self.of_type("parameter_msg"):
            parameter = payload.get("param") or payload["params"]  # list values arrive under "params"
            if parameter.get("source") == source:
                found[parameter["paramName"]] = parameter["paramValue"]
        return found

    def others(self) -> dict[str, Any]:
        return {payload["key"]: payload["value"] for payload in self.of_type("log_other")}

    def uploads(self, upload_type: str) -> list[dict[str, Any]]:
        return [payload for payload in self.of_type("file_upload") if payload["upload_type"] == upload_type]

    def content(self, upload: dict[str, Any]) -> bytes:
        return self.members[upload["file_path"]]

    def texts(self) -> dict[str, dict[int, str]]:
        found: dict[str, dict[int, str]] = {}
        for upload in self.uploads("text-sample"):
            key = upload["metadata"]["key"]
            found.setdefault(key, {})[upload["additional_params"]["step"]] = self.content(upload).decode()
        return found

    def images(self) -> dict[str, list[tuple[int, bytes]]]:
        """``{name: [(step, bytes)]}`` of images and figures (Comet calls both visualizations)."""
        found: dict[str, list[tuple[int, bytes]]] = {}
        for upload in self.uploads("visualization"):
            params = upload["additional_params"]
            found.setdefault(params["figName"], []).append((params["step"], self.content(upload)))
        return found

    def assets(self) -> dict[str, tuple[int | None, dict, bytes]]:
        """``{file name: (step, metadata, bytes)}`` of plain assets (tables, artifacts, config.json)."""
        return {
            upload["additional_params"]["fileName"]: (
                upload["additional_params"].get("step"),
                upload.get("metadata") or {},
                self.content(upload),
            )
            for upload in self.uploads("asset")
        }


def archive_of(tracker: Any) -> CometArchive:
    assert tracker.archive_path is not None, f"no archive (mode {tracker.mode})"
    return CometArchive(tracker.archive_path)


@pytest.fixture
def comet_archive():
    """``comet_archive(tracker)``: the finished tracker's offline archive."""
    return archive_of


@pytest.fixture(autouse=True)
def _no_comet_account(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own Comet settings must not turn the tests online: no key, no overrides.

    Also forgets warnings already given, since the finish report lists a skipped value only with its warning.
    """
    reset_warnings()
    for variable in list(os.environ):
        if variable.startswith("COMET_") and variable not in (
            "COMET_DISABLE_AUTO_LOGGING",
            "COMET_ERROR_TRACKING_ENABLE",
        ):
            monkeypatch.delenv(variable)
    monkeypatch.setenv("COMET_API_KEY", "")  # wins over a key in ~/.comet.config
