"""The core's contract suite against a real Aim repo, read back with ``aim.Repo``."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from tracking_core.testing.contract import ContractRun, TrackerContract

_spec = importlib.util.spec_from_file_location("_tracking_aim_readback", Path(__file__).with_name("aim_readback.py"))
readback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readback)


class TestAimContract(TrackerContract):
    backend_name = "aim"

    def _run(self, run: ContractRun) -> Any:
        return readback.get_run(run.logging_dir, run.tracker.run_hash)

    def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
        return readback.metrics(self._run(run))

    def read_config(self, run: ContractRun) -> dict[str, Any]:
        return self._run(run)["hparams"]

    def read_texts(self, run: ContractRun) -> dict[str, dict[int, str]]:
        stored = self._run(run)
        names = readback.sequence_names(stored, ("aim.text",))
        return {
            name: {step: text.data for step, text in readback.sequence(stored, "text", name).items()} for name in names
        }

    def read_images(self, run: ContractRun) -> dict[str, list[int]]:
        stored = self._run(run)
        names = readback.sequence_names(stored, ("aim.image", "list(aim.image)"))
        return {name: sorted(readback.sequence(stored, "image", name)) for name in names}

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        stored = self._run(run)
        tables = {}
        for name, contexts in readback.sequence_names(stored, ("aim.text",)).items():
            if {"type": "table"} in contexts:
                texts = readback.sequence(stored, "text", name, {"type": "table"})
                tables[name] = readback.parse_markdown_table(texts[max(texts)].data)[1]
        return tables
