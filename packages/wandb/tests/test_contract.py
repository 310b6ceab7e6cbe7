"""The core's contract suite against real offline W&B runs, read back from the ``.wandb`` transaction log
(``tracking_wandb.reader``: wandb 0.31 ships no Python reader for it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracking_core.testing.contract import ContractRun, TrackerContract
from tracking_wandb.reader import read_run


def no_credentials_env(tmp_path: Path) -> dict[str, str]:
    """A HOME without a netrc or W&B settings, so the embedded default is what runs."""
    return {"HOME": str(tmp_path / "home")}


class TestWandbContract(TrackerContract):
    backend_name = "wandb"

    def env(self, tmp_path: Path) -> dict[str, str]:
        return no_credentials_env(tmp_path)

    def _read(self, run: ContractRun) -> Any:
        directory = run.tracker.run_dir
        assert directory is not None and directory.is_relative_to(run.logging_dir), directory
        return read_run(directory)

    def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
        return self._read(run).metrics()

    def read_config(self, run: ContractRun) -> dict[str, Any]:
        return self._read(run).user_config()

    def read_texts(self, run: ContractRun) -> dict[str, dict[int, str]]:
        return self._read(run).of_type(str)

    def read_images(self, run: ContractRun) -> dict[str, list[int]]:
        stored = self._read(run)
        found = {}
        for key, steps in stored.of_type("images/separated").items():
            for value in steps.values():  # the PNGs W&B wrote must exist
                assert value["count"] == len(value["filenames"])
                assert all((stored.files / name).is_file() for name in value["filenames"]), value
            found[key] = sorted(steps)
        return found

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        stored = self._read(run)
        return {
            key: json.loads((stored.files / value["path"]).read_text())["data"]
            for key, steps in stored.of_type("table-file").items()
            for value in steps.values()
        }
