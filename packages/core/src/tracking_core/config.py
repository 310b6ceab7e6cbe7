"""The one config semantic: what every backend's ``store_init_configuration`` receives.

``sanitize_config`` runs once per run in the caller: a deep copy with secrets redacted, nesting and
JSON types kept, dataclasses / namespaces / mappings turned into dicts, tuples and sets into lists,
numpy/tensor scalars into numbers, and every other object into its ``str``. Adapters whose SDK needs
flat or string parameters use ``flatten_config`` and ``stringify`` on top of it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from .values import SEPARATOR, _scalar

REDACTED = "<redacted>"
_SECRET_PARTS = (
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "api_key",
    "api-key",
    "credential",
    "private_key",
    "private-key",
)
_MAX_DEPTH = 32


def is_secret_key(key: str) -> bool:
    """Keys such as ``hub_token``, ``WANDB_API_KEY``, ``db_password`` never leave the process."""
    lowered = str(key).lower()
    return any(part in lowered for part in _SECRET_PARTS)


def _to_mapping(value: Any) -> Mapping | None:
    if isinstance(value, Mapping):
        return value
    fields = getattr(type(value), "__dataclass_fields__", None)
    if fields is not None and not isinstance(value, type):
        return {name: getattr(value, name) for name in fields}
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
