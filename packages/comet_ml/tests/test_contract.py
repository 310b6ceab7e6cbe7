"""The shared tracker contract, read back from Comet's offline archive."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from tracking_core.testing.contract import ContractRun, TrackerContract


class TestCometMLContract(TrackerContract):
    backend_name = "comet_ml"

    @pytest.fixture(autouse=True)
    def _reader(self, comet_archive) -> None:
        self.archive_of = comet_archive

    def _read(self, run: ContractRun):
        archive = self.archive_of(run.tracker)
        assert archive.path.parent == run.dispatcher.run_dir / "comet_ml", "the archive should sit in the run folder"
        return archive

    def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
        return self._read(run).metrics()

    def read_config(self, run: ContractRun) -> dict[str, Any]:
        # Comet flattens nested parameters with "|".
        return {key.replace("|", "/"): value for key, value in self._read(run).parameters().items()}

    def read_texts(self, run: ContractRun) -> dict[str, dict[int, str]]:
        return self._read(run).texts()

    def read_images(self, run: ContractRun) -> dict[str, list[int]]:
        return {name: [step for step, _ in items] for name, items in self._read(run).images().items()}

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        tables = {}
        for _name, (_step, metadata, content) in self._read(run).assets().items():
            if "table" in metadata:
                rows = list(csv.reader(io.StringIO(content.decode())))
                tables[metadata["table"]] = rows[1:]
        return tables
