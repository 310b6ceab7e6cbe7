"""What every SwanLab store line keeps the same way: a table's JSON file and ISO time stamps."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any


def table_file(file: Path) -> dict[str, Any] | None:
    """A table SwanLab saved as an echarts JSON file (``columns``, ``data``), or None for another chart."""
    content = json.loads(file.read_text(encoding="utf-8"))
    if content.get("_swanLab") != "table":
        return None
    columns = [column["field"] for column in content["colDefs"]]
    return {"columns": columns, "data": [[row.get(column) for column in columns] for row in content["rowData"]]}


def iso_seconds(stamp: Any) -> float | None:
    """SwanLab's ISO time string (UTC) as seconds since the epoch; None for anything else."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None
