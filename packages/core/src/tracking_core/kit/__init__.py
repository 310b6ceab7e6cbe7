"""The backend author's kit: everything a backend package imports from core besides the contract.

A backend imports the contract from ``tracking_core`` (``GeneralTracker``, ``RunContext``,
``Histogram``, ...) and the rest from here, so the core's inner layout can change without touching
any backend. Names load on first use: importing the kit costs nothing until a tool is used.

- images, figures and tables: ``to_hwc_uint8``, ``image_list``, ``figure_to_png``, ``figure_to_array``,
  ``table_rows``, ``encode_png``, ``decode_png``, ``load_png``;
- the run's config: ``merge_config`` (every backend that keeps a config merges with it),
  ``flatten_config``, ``stringify``;
- names the library turns into files: ``check_name``, ``check_optional_name``, ``check_artifact_path``,
  ``warn_links_leaving``, ``MAX_NAME_LENGTH``;
- the SDK object and resuming: ``sdk_object``, ``saved_resume``, ``not_resumed``, ``chosen_instead``,
  ``per_rank``, ``rank_name``, ``rank_tags``;
- files: ``AppendFile`` (all-or-nothing flushes), ``file_lock`` (two ranks creating one store),
  ``store_cache`` (new stores copied from one the SDK made once), ``read_head`` (the code's commit);
- talking to the user: ``notice``, ``warn_once``, ``logger``; ``probe_http`` for a server's address;
- the run's context: ``RUN_CONTEXT_KEY``, ``context_summary``, ``context_files``;
- rewinds: ``store_marker``, ``MARKER_KEY``;
- importers (``tracking import``): ``SourceRun``, ``Point``, ``Media``, ``SourceError``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..context import RUN_CONTEXT_KEY
    from ..context.native import files as context_files
    from ..context.native import summary as context_summary
    from ..contract.tracker import MARKER_KEY, store_marker
    from ..intake.config import flatten_config, stringify
    from ..notices import logger, notice, warn_once
    from ..transfer.model import Media, Point, SourceError, SourceRun
    from . import store_cache
    from .adapters import figure_to_array, figure_to_png, image_list, merge_config, probe_http, table_rows, to_hwc_uint8
    from .appendfile import AppendFile
    from .filelock import file_lock
    from .gitinfo import GitHead, read_head
    from .paths import (
        MAX_ARTIFACT_PATH_LENGTH,
        MAX_NAME_LENGTH,
        check_artifact_path,
        check_name,
        check_optional_name,
        warn_links_leaving,
    )
    from .png import decode_png, encode_png, load_png
    from .sdk import chosen_instead, not_resumed, per_rank, rank_name, rank_tags, saved_resume, sdk_object

#: public name -> (module relative to ``tracking_core``, name there)
_WHERE: dict[str, tuple[str, str]] = {
    **{
        name: ("kit.adapters", name)
        for name in (
            "figure_to_array",
            "figure_to_png",
            "image_list",
            "merge_config",
            "probe_http",
            "table_rows",
            "to_hwc_uint8",
        )
    },
    "AppendFile": ("kit.appendfile", "AppendFile"),
    "file_lock": ("kit.filelock", "file_lock"),
    "GitHead": ("kit.gitinfo", "GitHead"),
    "read_head": ("kit.gitinfo", "read_head"),
    **{
        name: ("kit.paths", name)
        for name in (
            "MAX_ARTIFACT_PATH_LENGTH",
            "MAX_NAME_LENGTH",
            "check_artifact_path",
            "check_name",
            "check_optional_name",
            "warn_links_leaving",
        )
    },
    **{name: ("kit.png", name) for name in ("decode_png", "encode_png", "load_png")},
    **{
        name: ("kit.sdk", name)
        for name in (
            "chosen_instead",
            "not_resumed",
            "per_rank",
            "rank_name",
            "rank_tags",
            "saved_resume",
            "sdk_object",
        )
    },
    **{name: ("notices", name) for name in ("logger", "notice", "warn_once")},
    **{name: ("intake.config", name) for name in ("flatten_config", "stringify")},
    "RUN_CONTEXT_KEY": ("context", "RUN_CONTEXT_KEY"),
    "context_summary": ("context.native", "summary"),
    "context_files": ("context.native", "files"),
    **{name: ("contract.tracker", name) for name in ("MARKER_KEY", "store_marker")},
    **{name: ("transfer.model", name) for name in ("Media", "Point", "SourceError", "SourceRun")},
}

__all__ = [
    "MARKER_KEY",
    "MAX_ARTIFACT_PATH_LENGTH",
    "MAX_NAME_LENGTH",
    "RUN_CONTEXT_KEY",
    "AppendFile",
    "GitHead",
    "Media",
    "Point",
    "SourceError",
    "SourceRun",
    "check_artifact_path",
    "check_name",
    "check_optional_name",
    "chosen_instead",
    "context_files",
    "context_summary",
    "decode_png",
    "encode_png",
    "figure_to_array",
    "figure_to_png",
    "file_lock",
    "flatten_config",
    "image_list",
    "load_png",
    "logger",
    "merge_config",
    "not_resumed",
    "notice",
    "per_rank",
    "probe_http",
    "rank_name",
    "rank_tags",
    "read_head",
    "saved_resume",
    "sdk_object",
    "store_cache",
    "store_marker",
    "stringify",
    "table_rows",
    "to_hwc_uint8",
    "warn_links_leaving",
    "warn_once",
]


def __getattr__(name: str) -> Any:
    if name == "store_cache":
        return importlib.import_module(".store_cache", __name__)
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'tracking_core.kit' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tracking_core.{where[0]}"), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
