"""Read-back with TensorBoard's own reader (the accumulator its dashboards use)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


class EventReader:
    """Everything one run directory holds, through ``plugin_event_accumulator``."""

    def __init__(self, log_dir: str | Path) -> None:
        from tensorboard.backend.event_processing import plugin_event_accumulator

        # size_guidance 0 keeps every event (the default keeps a reservoir sample per tag).
        self.accumulator = plugin_event_accumulator.EventAccumulator(str(log_dir), size_guidance={"tensors": 0})
        self.accumulator.Reload()

    def tags(self, plugin: str) -> list[str]:
        accumulator = self.accumulator
        return [
            tag
            for tag in accumulator.Tags()["tensors"]
            if accumulator.SummaryMetadata(tag).plugin_data.plugin_name == plugin
        ]

    def arrays(self, tag: str) -> list[tuple[int, Any]]:
        from tensorboard.util import tensor_util

        return [(event.step, tensor_util.make_ndarray(event.tensor_proto)) for event in self.accumulator.Tensors(tag)]

    def scalars(self) -> dict[str, dict[int, float]]:
        return {tag: {step: float(array) for step, array in self.arrays(tag)} for tag in self.tags("scalars")}

    def texts(self) -> dict[str, dict[int, str]]:
        return {
            tag: {step: array.item().decode() for step, array in self.arrays(tag) if array.ndim == 0}
            for tag in self.tags("text")
        }

    def tables(self) -> dict[str, list[list[str]]]:
        """``{tag: rows}`` of the last 2-D text tensor per tag, the column-name row included."""
        found = {}
        for tag in self.tags("text"):
            for _step, array in self.arrays(tag):
                if array.ndim == 2:
                    found[tag] = [[cell.decode() for cell in row] for row in array]
        return found

    def images(self) -> dict[str, list[tuple[int, list[bytes]]]]:
        """``{tag: [(step, [png, ...])]}``; the tensor is ``[width, height, png...]``."""
        return {tag: [(step, list(array[2:])) for step, array in self.arrays(tag)] for tag in self.tags("images")}

    def hparams(self) -> dict[str, Any]:
        from tensorboard.plugins.hparams import metadata

        content = self.accumulator.PluginTagToContent("hparams")[metadata.SESSION_START_INFO_TAG]
        info = metadata.parse_session_start_info_plugin_data(content)
        return {key: getattr(value, value.WhichOneof("kind")) for key, value in info.hparams.items()}

    def session_end_status(self) -> int:
        from tensorboard.plugins.hparams import metadata

        content = self.accumulator.PluginTagToContent("hparams")[metadata.SESSION_END_INFO_TAG]
        return metadata.parse_session_end_info_plugin_data(content).status

    def config_json(self) -> Any:
        text = self.texts()["config/json"][0]
        assert text.startswith("```json\n") and text.endswith("\n```"), text
        return json.loads(text[len("```json\n") : -len("\n```")])


@pytest.fixture
def event_reader() -> type[EventReader]:
    return EventReader
