"""The one config semantic: what every backend's ``store_init_configuration`` receives.

``sanitize_config`` runs once per run in the caller: a deep copy with secrets redacted, nesting and
JSON types kept, dataclasses / namespaces / mappings turned into dicts, tuples and sets into lists,
numpy/tensor scalars into numbers, and every other object into its ``str``. Adapters whose SDK needs
flat or string parameters use ``flatten_config`` and ``stringify`` on top of it.
"""

from __future__ import annotations

import enum
import json
import math
import os
from collections.abc import Mapping
from typing import Any

from .redaction import REDACTED, announce, is_secret_key, redact_text
from .values import SEPARATOR, _scalar

__all__ = ["REDACTED", "flatten_config", "is_secret_key", "merge_config", "sanitize_config", "stringify"]

_MAX_DEPTH = 32
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _to_mapping(value: Any) -> Mapping[Any, Any] | None:
    """The fields of a config-like object as a mapping, or ``None`` when it is not one.

    Mappings, dataclasses, objects with ``model_dump``/``to_dict`` (pydantic, HF ``TrainingArguments``)
    and plain objects with a ``__dict__`` (``argparse.Namespace``, ``types.SimpleNamespace``, a config
    class instance) qualify; classes, functions, modules and arrays do not.
    """
    if isinstance(value, Mapping):
        return value
    if isinstance(value, (type, enum.Enum)) or hasattr(value, "shape") or callable(value):
        return None
    fields = getattr(type(value), "__dataclass_fields__", None)
    if fields is not None:
        return {name: getattr(value, name, None) for name in fields}
    for method in ("model_dump", "to_dict", "_asdict"):
        to_dict = getattr(value, method, None)
        if callable(to_dict):
            try:
                result = to_dict()
            except Exception:
                continue
            if isinstance(result, Mapping):
                return result
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict) and type(value).__module__ not in ("builtins", "types"):
        public = {key: item for key, item in attributes.items() if not key.startswith("_")}
        return public or None  # an object without public fields is described by its str
    if type(value).__name__ == "SimpleNamespace" and isinstance(attributes, dict):
        return attributes
    return None


def _number(value: Any) -> Any:
    """Ints beyond 64 bits become their exact decimal text: several SDKs fail on them (Trackio, TensorBoard)."""
    number = _scalar(value)
    if type(number) is int and not _INT64_MIN <= number <= _INT64_MAX:
        return str(number)
    return number


def _clean(value: Any, depth: int, seen: set[int], path: str, redacted: list[str]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _redacted_text(str(value), path, redacted)
    if isinstance(value, (int, float)):
        return _number(value)
    if depth > _MAX_DEPTH or id(value) in seen:
        return str(value) if depth <= _MAX_DEPTH else "<too deep>"
    mapping = _to_mapping(value)
    if mapping is not None:
        seen = seen | {id(value)}
        cleaned = {}
        for key, item in mapping.items():
            name = _redacted_text(str(key), path, redacted)
            where = f"{path}{SEPARATOR}{name}" if path else name
            # A number or a flag is not a secret, whatever its key says (pad_token_id, max_tokens).
            if is_secret_key(key) and item is not None and not isinstance(item, (bool, int, float)):
                cleaned[name] = REDACTED
                redacted.append(where)
            else:
                cleaned[name] = _clean(item, depth + 1, seen, where, redacted)
        return cleaned
    if isinstance(value, (list, tuple, set, frozenset)):
        seen = seen | {id(value)}
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_clean(item, depth + 1, seen, path, redacted) for item in items]
    if isinstance(value, os.PathLike):
        return _redacted_text(os.fspath(value), path, redacted)
    try:
        return _number(value)  # numpy / tensor scalars
    except Exception:
        pass
    try:
        return _redacted_text(str(value), path, redacted)
    except Exception:
        return f"<unprintable {type(value).__name__}>"


def _redacted_text(text: str, path: str, redacted: list[str]) -> str:
    """``text`` as valid UTF-8 with credential-shaped parts redacted; notes ``path`` when it changed."""
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate fails most SDKs' encoders
    clean = redact_text(text)
    if clean is not text:
        redacted.append(path or "config")
    return clean


def sanitize_config(config: Any) -> dict[str, Any]:
    """A JSON-able deep copy of ``config`` with secrets redacted (see :mod:`tracking_core.intake.redaction`).

    Never raises; announces once which keys were redacted.
    """
    if config is None:
        return {}
    redacted: list[str] = []
    cleaned = _clean(config, 0, set(), "", redacted)
    if redacted:
        announce("config", dict.fromkeys(redacted))
    if not isinstance(cleaned, dict):
        return {"config": cleaned}
    return cleaned


def flatten_config(config: Mapping[Any, Any], separator: str = SEPARATOR) -> dict[str, Any]:
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


def merge_config(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` merged into ``old``, nested sections key by key: a later ``log_config`` adds to or replaces
    keys, never a whole section (every backend that keeps the run's config merges with this)."""
    merged = dict(old)
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            value = merge_config(merged[key], value)
        merged[key] = value
    return merged


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
