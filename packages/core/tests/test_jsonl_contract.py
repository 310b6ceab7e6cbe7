"""The shared contract suite, run against the built-in journal and the in-memory tracker."""

from __future__ import annotations

import pytest
from tracking_core.contract import registry
from tracking_core.store.journal import JournalSummary, read_journal
from tracking_core.testing import ContractRun, MemoryTracker, TrackerContract


class TestJsonlContract(TrackerContract):
    backend_name = "jsonl"

    def _journal(self, run: ContractRun):
        return run.tracker.journal_path

    def read_metrics(self, run):
        summary = JournalSummary(self._journal(run))
        return {
            key: {step: value for step, value in points}
            for key, points in summary.metrics.items()
            if any(isinstance(value, (int, float)) for _, value in points)
        }

    def read_texts(self, run):
        summary = JournalSummary(self._journal(run))
        return {k: dict(points) for k, points in summary.metrics.items() if all(isinstance(v, str) for _, v in points)}

    def read_config(self, run):
        return JournalSummary(self._journal(run)).config

    def read_images(self, run):
        images: dict[str, list[int]] = {}
        for record in read_journal(self._journal(run)):
            if record["type"] == "images":
                for key, paths in record["images"].items():
                    assert all((run.tracker.run_dir / path).read_bytes().startswith(b"\x89PNG") for path in paths)
                    images.setdefault(key, []).append(record["step"])
        return images

    def read_tables(self, run):
        return {r["name"]: r["data"] for r in read_journal(self._journal(run)) if r["type"] == "table"}


class TestMemoryContract(TrackerContract):
    """A custom tracker sees exactly what the contract promises (fresh flat dicts, explicit steps)."""

    backend_name = "memory"

    @pytest.fixture(autouse=True)
    def _register(self):
        registry.register_tracker_class(MemoryTracker)

    def _run(self, run):
        return run.tracker

    def read_metrics(self, run):
        out: dict[str, dict[int, float]] = {}
        for step, values in self._run(run).metrics:
            assert isinstance(step, int)
            for key, value in values.items():
                assert (isinstance(key, str) and "/" not in key) or key.count("/") >= 1
                assert type(value) in (int, float, str), (key, type(value))
                if not isinstance(value, str):
                    out.setdefault(key, {})[step] = value
        return out

    def read_texts(self, run):
        out: dict[str, dict[int, str]] = {}
        for step, values in self._run(run).metrics:
            for key, value in values.items():
                if isinstance(value, str):
                    out.setdefault(key, {})[step] = value
        return out

    def read_config(self, run):
        return self._run(run).config

    def read_images(self, run):
        return {key: [step] for step, values in self._run(run).images for key in values}

    def read_tables(self, run):
        return {name: rows for name, _, rows, _ in self._run(run).tables}
