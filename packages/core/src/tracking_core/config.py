"""The one config semantic: what every backend's ``store_init_configuration`` receives.

``sanitize_config`` runs once per run in the caller: a deep copy with secrets redacted, nesting and
JSON types kept, dataclasses / namespaces / mappings turned into dicts, tuples and sets into lists,
numpy/tensor scalars into numbers, and every other object into its ``str``. Adapters whose SDK needs
flat or string parameters use ``flatten_config`` and ``stringify`` on top of it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Mapping
from typing import Any

from .values import SEPARATOR, _scalar

REDACTED = "<redacted>"
_SECRET_KEY = re.compile(r"token|secret|passw(or)?d|api[_-]?key|credential|private[_-]?key", re.IGNORECASE)
_MAX_DEPTH = 32


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(str(key)))


def _to_mapping(value: Any) -> Mapping | None:
    if isinstance(value, Mapping):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if type(value).__name__ == "Namespace" and hasattr(value, "__dict__"):  # argparse / SimpleNamespace
        return vars(value)
    to_dict = getattr(value, "to_dict", None) or getattr(value, "model_dump", None)
    if callable(to_dict) and not isinstance(value, type) and not hasattr(value, "shape"):
        try:
            result = to_dict()
        except Exception:
            return None
        return result if isinstance(result, Mapping) else None
    return None


def _clean(value: Any, depth: int, seen: set[int]) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return _scalar(value)
    if depth > _MAX_DEPTH or id(value) in seen:
        return str(value) if depth <= _MAX_DEPTH else "<too deep>"
    mapping = _to_mapping(value)
    if mapping is not None:
        seen = seen | {id(value)}
        return {
            str(key): (REDACTED if is_secret_key(key) and item is not None else _clean(item, depth + 1, seen))
            for key, item in mapping.items()
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        seen = seen | {id(value)}
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_clean(item, depth + 1, seen) for item in items]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    try:
        return _scalar(value)  # numpy / tensor scalars
    except Exception:
        pass
    try:
        return str(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"


def sanitize_config(config: Any) -> dict[str, Any]:
    """A JSON-able deep copy of ``config`` with secret-looking keys redacted. Never raises."""
    if config is None:
        return {}
    cleaned = _clean(config, 0, set())
    if not isinstance(cleaned, dict):
        return {"config": cleaned}
    return cleaned


def flatten_config(config: Mapping, separator: str = SEPARATOR) -> dict[str, Any]:
    """Nested dicts to ``a/b`` keys; lists stay values (use ``stringify`` where the SDK needs text)."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, Mapping) and node:
            for key, item in node.items():
                walk(f"{prefix}{separator}{key}" if prefix else str(key), item)
        else:
            flat[prefix] = node

    for key, item in config.items():
        walk(str(key), item)
    return flat


def stringify(value: Any) -> str:
    """A parameter value as text: JSON for lists/dicts, ``None`` -> ``"None"``, numbers via ``repr``."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (int, float)):
        return repr(value)
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except Exception:
        return str(value)
