"""The core's contract suite, read back with TensorBoard's own event accumulator."""

from __future__ import annotations

from typing import Any

import pytest
from tracking_core.testing.contract import ContractRun, TrackerContract


class TestTensorBoardContract(TrackerContract):
    backend_name = "tensorboard"
    rel_tol = 1e-6  # TensorBoard stores scalars as float32

    @pytest.fixture(autouse=True)
    def _reader(self, event_reader) -> None:
        self.reader_class = event_reader

    def _read(self, run: ContractRun):
        log_dir = run.tracker.log_dir
        assert log_dir == run.dispatcher.run_dir, "the event files should sit in the dispatcher's run folder"
        return self.reader_class(log_dir)

    def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
        return self._read(run).scalars()

    def read_config(self, run: ContractRun) -> dict[str, Any]:
        # The exact JSON copy; the hparams copy (numbers are doubles there) is checked in test_tensorboard.py.
        return self._read(run).config_json()

    def read_texts(self, run: ContractRun) -> dict[str, dict[int, str]]:
        return self._read(run).texts()

    def read_images(self, run: ContractRun) -> dict[str, list[int]]:
        return {tag: [step for step, _ in samples] for tag, samples in self._read(run).images().items()}

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        return {tag: rows[1:] for tag, rows in self._read(run).tables().items()}  # row 0 = column names
