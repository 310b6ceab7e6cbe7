"""The core's contract suite against real DVCLive folders, read back from DVCLive's own files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tracking_core.testing import ContractRun, TrackerContract


class TestDVCLiveContract(TrackerContract):
    backend_name = "dvclive"

    @pytest.fixture(autouse=True)
    def _files(self, dvclive_files) -> None:
        self.files = dvclive_files

    def _folder(self, run: ContractRun) -> Path:
        folder = run.tracker.dir
        assert folder == run.dispatcher.run_dir / "dvclive", folder
        return folder

    def read_metrics(self, run):
        return self.files.scalars(self._folder(run))

    def read_config(self, run):
        return self.files.params(self._folder(run))

    def read_texts(self, run):
        return self.files.texts(self._folder(run))

    def read_images(self, run):
        images = self.files.image_files(self._folder(run))
        return {key: [int(name.split(".")[0].split("_")[0]) for name in names] for key, names in images.items()}
