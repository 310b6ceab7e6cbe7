"""The shared contract suite against a real SwanLab offline run, read back with SwanLab's record reader."""

from __future__ import annotations

from pathlib import Path

from tracking_core.testing import ContractRun, TrackerContract
from tracking_swanlab.reader import SwanLabRunData, read_run


def swanlab_env(tmp_path: Path) -> dict[str, str]:
    """No credentials, no user config dir outside the test folder: the embedded default."""
    return {"SWANLAB_ROOT": str(tmp_path / "swanlab-root"), "HOME": str(tmp_path / "home")}


class TestSwanLabContract(TrackerContract):
    backend_name = "swanlab"

    def env(self, tmp_path: Path) -> dict[str, str]:
        return swanlab_env(tmp_path)

    def _data(self, run: ContractRun) -> SwanLabRunData:
        tracker = run.tracker
        assert tracker.mode == "offline", tracker.mode
        assert tracker.run_dir is not None and tracker.run_dir.is_relative_to(run.logging_dir), tracker.run_dir
        data = read_run(tracker.run_dir)
        assert data.finished and data.project == run.project
        return data

    def read_metrics(self, run):
        return self._data(run).scalars

    def read_config(self, run):
        return self._data(run).config

    def read_texts(self, run):
        return self._data(run).texts()

    def read_images(self, run):
        images: dict[str, list[int]] = {}
        for key, points in self._data(run).media.items():
            for point in points:
                if point.kind == "image":
                    assert all(path.read_bytes().startswith(b"\x89PNG") for path in point.files), point
                    images.setdefault(key, []).extend([point.step] * len(point.files))
        return images

    def read_tables(self, run):
        import swanlab

        if not hasattr(swanlab.echarts, "Table"):  # SwanLab 0.6.2-0.6.4 have none: test_earlier.py checks the note
            raise NotImplementedError("this SwanLab release has no tables")
        return self._data(run).tables()
