"""Images, tables and artifact names in the forms Aim takes them."""

from __future__ import annotations

from typing import Any

from tracking_core.kit import check_artifact_path, to_hwc_uint8


def artifact_name(prefix: str | None, name: str) -> str:
    """``prefix/name`` inside the run's artifacts; Aim copies to that path as given, so it is checked."""
    prefix = check_artifact_path(prefix)
    return f"{prefix}/{name}" if prefix else name


def is_single_image(value: Any) -> bool:
    """One image (or an ``(image, caption)`` pair), as opposed to a list of them or a 4-d batch."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
        return True  # (image, caption)
    return not isinstance(value, (list, tuple)) and getattr(value, "ndim", None) != 4


def image_and_caption(item: Any, dataformats: str | None = None) -> tuple[Any, str]:
    """``aim.Image`` wants HW or HWC uint8 arrays: every layout and dtype is converted by the core's adapter."""
    caption = ""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], str):
        item, caption = item
    return to_hwc_uint8(item, dataformats), caption


def markdown_table(columns: list[str], rows: list[list[Any]]) -> str:
    """A markdown pipe table; ``|`` in cells is escaped and line breaks become spaces."""

    def cell(value: Any) -> str:
        return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")

    lines = ["| " + " | ".join(cell(column) for column in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)
