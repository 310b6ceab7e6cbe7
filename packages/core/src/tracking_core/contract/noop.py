"""Stand-ins returned on ranks that do not log, so the same code runs on every rank."""

from __future__ import annotations

import os
from typing import Any

from .tracker import GeneralTracker


class _Nothing:
    """Accepts any attribute, call, index or context use and does nothing (an SDK object stand-in)."""

    def __getattr__(self, name: str) -> _Nothing:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> _Nothing:
        return self

    def __getitem__(self, key: Any) -> _Nothing:
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "<no-op>"


class NoOpTracker(GeneralTracker):
    """Full tracker interface that does nothing: what ``get_tracker`` returns on non-main ranks."""

    requires_logging_directory = False
    main_process_only = False

    def __init__(self, name: str = "noop") -> None:
        super().__init__(_blank=True)
        self.name = name  # type: ignore[misc]

    @property
    def tracker(self) -> Any:
        """An object that takes any attribute or call and does nothing, so SDK calls need no rank check."""
        return _Nothing()

    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        pass

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        pass

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        pass

    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        pass

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        # Backend-specific helpers (e.g. a tracker's own `log_histogram`) are no-ops too.
        if name.startswith("__"):
            raise AttributeError(name)
        return _Nothing()
