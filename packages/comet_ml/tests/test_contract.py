"""The shared tracker contract, read back from Comet's offline archive."""

from __future__ import annotations

import csv
import io
from typing import Any

from conftest import archive_of
from tracking_core.testing.contract import ContractRun, TrackerContract


class TestCometMLContract(TrackerContract):
    backend_name = "comet_ml"

    def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
        return archive_of(run.tracker).metrics()

    def read_config(self, run: ContractRun) -> dict[str, Any]:
        # Comet flattens nested parameters with "|".
        return {key.replace("|", "/"): value for key, value in archive_of(run.tracker).parameters().items()}

    def read_texts(self, run: ContractRun) -> dict[str, dict[int, str]]:
        return archive_of(run.tracker).texts()

    def read_images(self, run: ContractRun) -> dict[str, list[int]]:
        return {name: [step for step, _ in items] for name, items in archive_of(run.tracker).images().items()}

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        tables = {}
        for file_name, (_step, metadata, content) in archive_of(run.tracker).assets().items():
            if "table" in metadata:
                rows = list(csv.reader(io.StringIO(content.decode())))
                tables[metadata["table"]] = rows[1:]
        return tables
