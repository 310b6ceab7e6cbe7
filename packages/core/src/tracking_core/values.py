"""The one value semantic: what ``log`` turns the caller's values into, in the caller's thread.

The result is a flat ``{str: int | float | str}`` dict, built from the values as they are at call
time. Anything that cannot become a number or a string is reported in ``rejected`` (key -> reason)
so the dispatcher can warn once per key; it is never passed on to a backend.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

SEPARATOR = "/"

_PLAIN = (float, int, str)
_PLAIN_TYPES = frozenset(_PLAIN)


def _scalar(value: Any) -> Any:
    """A Python number or str for a numpy/tensor scalar or a bool; raises TypeError otherwise."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str)):
        # int/float subclasses (numpy.float64, IntEnum) are normalised to the plain type.
        return float(value) if isinstance(value, float) else (value if isinstance(value, str) else int(value))
    size = getattr(value, "size", None)
    if callable(size):  # torch.Tensor.size is a method; numel() is the element count
        numel = getattr(value, "numel", None)
        size = numel() if callable(numel) else None
    item = getattr(value, "item", None)
    if item is not None and callable(item) and (size is None or size == 1):
        if hasattr(value, "detach"):  # a tensor: detach so autograd history is not kept alive
            value = value.detach()
        result = value.item()
        if isinstance(result, bool):
            return int(result)
        if isinstance(result, (int, float)):
            return result
        if isinstance(result, complex):
            raise TypeError("complex numbers are not supported")
        return result if isinstance(result, str) else float(result)
    if size is not None and size != 1:
        raise TypeError(f"an array of {size} elements is not a scalar (log one element, or use log_table/log_images)")
    if value is None:
        raise TypeError("None is not a value")
    raise TypeError(f"{type(value).__name__} is not a number or a string")


def flatten_values(values: Mapping, rejected: dict[str, str]) -> dict[str, Any]:
    """Flatten nested mappings to ``a/b`` keys and make every leaf a Python number or str."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if type(key) is not str:
            key = str(key)
        if type(value) in _PLAIN:
            if key:
                out[key] = value
            else:
                rejected[key] = "an empty key cannot be stored by most backends"
            continue
        if isinstance(value, Mapping):
            for inner_key, inner_value in flatten_values(value, rejected).items():
                out[f"{key}{SEPARATOR}{inner_key}" if key else inner_key] = inner_value
            continue
        try:
            out[key] = _scalar(value)
        except Exception as error:  # anything odd a user hands us must not escape as a crash
            rejected[key] = str(error) if isinstance(error, TypeError) else f"{type(error).__name__}: {error}"
    return out


_known_keys: set[str] = set()  # non-empty str keys already seen: checked once, then by one set lookup
_MAX_KNOWN_KEYS = 100_000


def _plain_keys(values: dict) -> bool:
    """True when every key is a non-empty ``str``; remembers them so the next call is a C-level check."""
    if not all(type(key) is str and key for key in values):
        return False
    if len(_known_keys) > _MAX_KNOWN_KEYS:
        _known_keys.clear()
    _known_keys.update(values)
    return True


def snapshot(values: Mapping) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The caller-side copy ``log`` hands to the backends.

    The common case, a dict of plain numbers and strings under keys seen before, is checked and
    copied at C speed (set operations over ``map(type, ...)``); anything else takes the flattening path.
    """
    if (
        type(values) is dict
        and _PLAIN_TYPES.issuperset(map(type, values.values()))
        and (_known_keys.issuperset(values) or _plain_keys(values))
    ):
        return values.copy(), None
    if not isinstance(values, Mapping):
        raise TypeError(f"log() takes a dict of values, got {type(values).__name__}")
    rejected: dict[str, str] = {}
    out = flatten_values(values, rejected)
    return out, rejected or None


def is_non_finite(value: Any) -> bool:
    return type(value) is float and not math.isfinite(value)


# --- media -------------------------------------------------------------------------------------


def snapshot_media(value: Any) -> Any:
    """Copy an image/array so later in-place changes by the caller do not alter what gets logged."""
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot_media(item) for item in value)
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch tensor -> numpy array
        value = value.detach().cpu()
        if str(getattr(value, "dtype", "")) == "torch.bfloat16":
            value = value.float()
        return value.numpy().copy()
    copy = getattr(value, "copy", None)
    if callable(copy) and (hasattr(value, "shape") or hasattr(value, "getpixel")):
        return copy()
    return value


def image_problem(value: Any) -> str | None:
    """Why ``value`` is not an image the backends can take, or None when it is one."""
    if hasattr(value, "getpixel"):  # PIL
        return None
    shape = getattr(value, "shape", None)
    if shape is None:
        return f"{type(value).__name__} is not an image (use a numpy array, a tensor or a PIL image)"
    shape = tuple(shape)
    if len(shape) == 2 or (len(shape) == 3 and (shape[-1] in (1, 3, 4) or shape[0] in (1, 3, 4))):
        return None
    return f"shape {shape} is not HW, HWC or CHW with 1, 3 or 4 channels"
