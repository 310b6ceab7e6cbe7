"""An in-memory tracker: what a custom backend sees, recorded for assertions."""

from __future__ import annotations

import threading
from typing import Any, cast

from ..contract.tracker import GeneralTracker
from ..intake.config import merge_config


class MemoryTracker(GeneralTracker):
    """Keeps every call in lists; ``MemoryTracker.runs`` holds each instance, newest last."""

    name = "memory"
    requires_logging_directory = False
    runs: list[MemoryTracker] = []

    def __init__(self, run_name: str = "memory", **kwargs: Any) -> None:
        super().__init__()
        self.run_name = run_name
        self.init_kwargs = kwargs
        self.started = False
        self.finished = 0
        self.config: dict[str, Any] | None = None
        self.metrics: list[tuple[int | None, dict[str, Any]]] = []
        self.images: list[tuple[int | None, dict[str, Any]]] = []
        self.tables: list[tuple[str, list[str], list[list[Any]], int | None]] = []
        self.figures: list[tuple[str, int | None, Any]] = []
        self.flushes = 0
        self.threads: set[str] = set()
        self._lock = threading.Lock()
        MemoryTracker.runs.append(self)

    @property
    def tracker(self) -> MemoryTracker:
        return self

    def start(self) -> None:
        self.started = True

    def store_init_configuration(self, values: dict[str, Any]) -> None:
        # Called again by ``Dispatcher.log_config``: later keys join (and override) the earlier ones.
        self.config = merge_config(self.config or {}, values)
        self.config_calls = getattr(self, "config_calls", 0) + 1

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        with self._lock:
            self.threads.add(threading.current_thread().name)
            self.metrics.append((step, values))

    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self.images.append((step, values))

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        from ..kit.adapters import table_rows

        names, rows = table_rows(columns, data, dataframe)
        self.tables.append((table_name, names, rows, step))

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        self.figures.append((name, step, figure))

    def flush(self) -> None:
        self.flushes += 1

    def finish(self) -> None:
        self.finished += 1

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        series: dict[str, dict[int, Any]] = {}
        for step, values in self.metrics:
            for key, value in values.items():
                series.setdefault(key, {})[cast(int, step)] = value  # the dispatcher numbers every record
        return series

    def series(self, key: str) -> dict[int, Any]:
        return {cast(int, step): values[key] for step, values in self.metrics if key in values}
