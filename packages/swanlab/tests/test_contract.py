"""The shared contract suite against a real SwanLab offline run (local mode before 0.6.2), read back with the
reader of the release that wrote it."""

from __future__ import annotations

from pathlib import Path

from tracking_core.testing import ContractRun, TrackerContract
from tracking_swanlab.older import v0_5_8
from tracking_swanlab.reader import SwanLabRunData, read_run

#: The mode a run without an account is written in: SwanLab 0.5.8 to 0.6.1 have no offline mode.
WRITTEN = "local" if v0_5_8.in_use() else "offline"


def swanlab_env(tmp_path: Path) -> dict[str, str]:
    """No credentials, no user config dir outside the test folder: the embedded default."""
    return {"SWANLAB_ROOT": str(tmp_path / "swanlab-root"), "HOME": str(tmp_path / "home")}


class TestSwanLabContract(TrackerContract):
    backend_name = "swanlab"

    def env(self, tmp_path: Path) -> dict[str, str]:
        return swanlab_env(tmp_path)

    def _data(self, run: ContractRun) -> SwanLabRunData:
        tracker = run.tracker
        assert tracker.mode == WRITTEN, tracker.mode
        assert tracker.run_dir is not None and tracker.run_dir.is_relative_to(run.logging_dir), tracker.run_dir
        data = read_run(tracker.run_dir)
        assert data.finished
        if data.project != run.project:  # SwanLab's local store keeps one project per log folder, and says so
            assert WRITTEN == "local", (data.project, run.project)
            assert any("one project per log folder" in note for note in tracker.report_notes()), tracker.report_notes()
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

        if getattr(getattr(swanlab, "echarts", None), "Table", None) is None:  # none before 0.6.5: see test_earlier.py
            raise NotImplementedError("this SwanLab release has no tables")
        return self._data(run).tables()
