"""The core contract suite, read back with MLflow's own client (see ``Reader`` in conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
from tracking_core.testing import ContractRun, TrackerContract


class TestMLflowContract(TrackerContract):
    backend_name = "mlflow"
    rel_tol = 0.0  # MLflow stores float64: values come back exactly

    @pytest.fixture(autouse=True)
    def _bind_reader(self, reader_of):
        self._reader_of = reader_of

    def _read(self, run: ContractRun) -> Any:
        return self._reader_of(run.tracker)

    def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
        return self._read(run).metrics()

    def read_config(self, run: ContractRun) -> dict[str, Any]:
        reader = self._read(run)
        params = reader.run.data.params  # the flattened, stringified params must agree with config.json
        assert params["model/depth"] == "2" and params["lr"] == "0.001" and params["optimizer/name"] == "adamw", params
        return reader.json("config.json")

    def read_texts(self, run: ContractRun) -> dict[str, dict[int, str]]:
        return self._read(run).texts()

    def read_images(self, run: ContractRun) -> dict[str, list[int]]:
        return self._read(run).images()

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        return self._read(run).tables()
