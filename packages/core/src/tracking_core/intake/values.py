"""The one value semantic: what ``log`` turns the caller's values into, in the caller's thread.

The result is a flat ``{str: int | float | str}`` dict, built from the values as they are at call
time. Anything that cannot become a number or a string is reported in ``rejected`` (key -> reason)
so the dispatcher can warn once per key; it is never passed on to a backend.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

from .media import image_problem
from .redaction import announce, redact_text

__all__ = ["SEPARATOR", "flatten_values", "image_problem", "is_non_finite", "snapshot", "snapshot_media"]

SEPARATOR = "/"

_PLAIN = (float, int, str)
_PLAIN_TYPES = frozenset(_PLAIN)
_NUMBER_TYPES = frozenset((float, int))
_FLOAT_TYPES = frozenset((float,))


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


_FLOAT_MAX = sys.float_info.max
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT64_LIMIT = 2.0**63  # every |value| below it is a float or an int every backend stores (a float: fast compares)
_MAX_DEPTH = 32


def key_problem(key: str) -> str | None:
    """Why no backend could store ``key`` as a metric name, or ``None``."""
    if not key:
        return "an empty key cannot be stored by most backends"
    if not key.isascii():
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            return "the key is not valid UTF-8 text (a lone surrogate)"
    return None


def _number(key: str, value: int | float, rejected: dict[str, str]) -> int | float | None:
    """``value``, or ``None`` with the reason in ``rejected`` for an int beyond 64 bits.

    SDKs store int64 or float64: a bigger int fails deep inside them (``float()`` overflows, SQLite
    and protobuf refuse it), taking its whole batch along, so it is refused here for every backend.
    """
    if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
        too_big = not -_FLOAT_MAX <= value <= _FLOAT_MAX
        rejected[key] = (
            "an integer too large for a float" if too_big else "an integer beyond 64 bits (log float(value))"
        )
        return None
    return value


def _text(value: str) -> str:
    if not value.isascii():
        value = value.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> '?'
    return redact_text(value)


def flatten_values(
    values: Mapping[Any, Any], rejected: dict[str, str], prefix: str = "", seen: frozenset[int] = frozenset()
) -> dict[str, Any]:
    """Flatten nested mappings to ``a/b`` keys and make every leaf a Python number or str.

    ``rejected`` gets the full key of every value that cannot be logged, with the reason: a
    non-scalar, an empty or non-UTF-8 key, a mapping that contains itself, or a key that two
    values map to (``{"a/b": 1, "a": {"b": 2}}``: the first one is kept).
    """
    out: dict[str, Any] = {}
    seen = seen | {id(values)}
    redacted: list[str] = []
    for key, value in values.items():
        if type(key) is not str:
            key = str(key)
        name = f"{prefix}{SEPARATOR}{key}" if prefix and key else (prefix or key)
        problem = key_problem(key) if key or not isinstance(value, Mapping) else None
        if problem:  # reported under a printable key: a lone surrogate would break the report's output
            shown = (
                name.encode("utf-8", "backslashreplace").decode("utf-8")
                if key
                else f"{prefix}{SEPARATOR}" * bool(prefix)
            )
            rejected[shown] = problem
            continue
        if isinstance(value, Mapping):
            if id(value) in seen or len(seen) > _MAX_DEPTH:
                rejected[name] = "a dict that contains itself" if id(value) in seen else "nested too deep"
                continue
            for inner_key, inner_value in flatten_values(value, rejected, name, seen).items():
                _put(out, inner_key, inner_value, rejected)
            continue
        try:
            scalar = _scalar(value)
        except Exception as error:  # anything odd a user hands us must not escape as a crash
            rejected[name] = str(error) if isinstance(error, TypeError) else f"{type(error).__name__}: {error}"
            continue
        if type(scalar) is str:
            clean = _text(scalar)
            if clean is not scalar and clean != scalar:
                redacted.append(name)
            scalar = clean
        else:
            scalar = _number(name, scalar, rejected)
            if scalar is None:
                continue
        _put(out, name, scalar, rejected)
    if redacted:
        announce("log", redacted)
    return out


def _put(out: dict[str, Any], key: str, value: Any, rejected: dict[str, str]) -> None:
    if key in out:
        rejected[key] = "two values map to this key (e.g. 'a/b' and {'a': {'b': ...}}); the first one is logged"
    else:
        out[key] = value


_known_keys: set[str] = set()  # non-empty UTF-8 str keys already seen: checked once, then by one set lookup
_MAX_KNOWN_KEYS = 100_000


def _plain_keys(values: dict[Any, Any]) -> bool:
    """True when every key is a non-empty ``str`` of valid UTF-8; remembers them so the next call is a C-level check."""
    if not all(type(key) is str and key and (key.isascii() or key_problem(key) is None) for key in values):
        return False
    if len(_known_keys) > _MAX_KNOWN_KEYS:
        _known_keys.clear()
    _known_keys.update(values)
    return True


def snapshot(values: Mapping[Any, Any]) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The caller-side copy ``log`` hands to the backends.

    The common case, a dict of floats under keys seen before, is checked and copied at C speed (set
    operations over ``map(type, ...)``). A dict that also holds ints pays one ``sum`` over
    ``map(abs, ...)``, which sends ints beyond 64 bits (and NaN) to the slow path; a dict holding
    strings also pays for the secret check of each string. Anything else takes the flattening path.
    """
    if type(values) is dict:
        # One set of the value types (frozenset.issuperset would build it anyway), then set compares.
        kinds = set(map(type, values.values()))
        if kinds <= _FLOAT_TYPES:  # the common case costs what it always did
            if _known_keys.issuperset(values) or _plain_keys(values):
                return values.copy(), None
        elif kinds <= _NUMBER_TYPES:  # ints too: one more pass, the 64-bit range
            if _small(values) and (_known_keys.issuperset(values) or _plain_keys(values)):
                return values.copy(), None
        elif kinds <= _PLAIN_TYPES:  # strings: the secret check of each
            if _strings_are_plain(values) and (_known_keys.issuperset(values) or _plain_keys(values)):
                return values.copy(), None
    if not isinstance(values, Mapping):
        raise TypeError(f"log() takes a dict of values, got {type(values).__name__}")
    rejected: dict[str, str] = {}
    out = flatten_values(values, rejected)
    return out, rejected or None


def _small(values: dict[Any, Any]) -> bool:
    """Every number's magnitude is below 2**63, in one C-level pass (a sum of absolute values cannot cancel).

    False also for NaN, inf, an int too big for a float (``OverflowError``) and sums that merely add up
    past 2**63: those take the slow path, which decides per value.
    """
    try:
        total: float = sum(map(abs, values.values()))
        return total < _INT64_LIMIT
    except OverflowError:
        return False


def _strings_are_plain(values: dict[Any, Any]) -> bool:
    """No string needs a change (ASCII or valid UTF-8, nothing secret-shaped) and no number is out of range."""
    for value in values.values():
        if type(value) is str:
            if not value.isascii() or redact_text(value) is not value:
                return False  # the slow path repairs or redacts it (and says so)
        elif type(value) is int and not -_INT64_LIMIT < value < _INT64_LIMIT:
            return False
    return True


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
