"""Histograms: one shape (counts over bin edges, plus the moments) that every backend maps from.

The caller hands raw values (a list, a numpy array, a tensor) or counts and edges it already
has; the dispatcher turns either into a :class:`Histogram` in the caller's thread, so the values
may change once ``log_histogram`` returns and no backend ever sees a tensor. numpy is used when
the process already has it (values that are arrays imply it); plain lists need nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any, NamedTuple

__all__ = ["Histogram", "histogram_from_counts", "histogram_of", "histogram_summary"]

MAX_BINS = 512  # TensorBoard, W&B and Aim all cap or slow down past a few hundred bins


class Histogram(NamedTuple):
    """Counts per bin; ``edges`` has one more entry than ``counts`` (bin ``i`` is ``[edges[i], edges[i+1])``)."""

    counts: list[float]
    edges: list[float]
    count: int  # type: ignore[assignment]  # the field hides tuple.count(value); nothing calls that on a Histogram
    total: float
    sum_squares: float
    min: float
    max: float

    @property
    def mean(self) -> float:
        """The values' mean (NaN for an empty histogram)."""
        return self.total / self.count if self.count else math.nan

    @property
    def std(self) -> float:
        """The values' population standard deviation (NaN for an empty histogram)."""
        if not self.count:
            return math.nan
        variance = self.sum_squares / self.count - self.mean**2
        return math.sqrt(max(variance, 0.0))

    def to_json(self) -> dict[str, Any]:
        """The fields as a dict, as the journal stores them."""
        return self._asdict()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Histogram:
        """The histogram a journal line stored."""
        return cls(**{field: data[field] for field in cls._fields})


def _flat_floats(values: Any) -> list[float]:
    """The values as a flat list of floats (tensors detached, nested lists flattened)."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor
        values = values.detach().cpu()
        if str(getattr(values, "dtype", "")) == "torch.bfloat16":
            values = values.float()
        values = values.numpy()
    if hasattr(values, "ravel") and hasattr(values, "tolist"):  # numpy
        return [float(value) for value in values.ravel().tolist()]
    out: list[float] = []
    stack: list[Any] = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)) or (isinstance(item, Iterable) and not isinstance(item, (str, bytes))):
            stack.extend(reversed(list(item)))
        elif isinstance(item, bool):
            out.append(float(item))
        elif isinstance(item, (int, float)) or hasattr(item, "__float__"):
            out.append(float(item))
        else:
            raise TypeError(f"histogram values must be numbers, got {type(item).__name__}")
    return out


def _numpy_histogram(array: Any, bins: int) -> tuple[Histogram, int]:
    import numpy as np  # the values are already an array: numpy is loaded

    array = np.asarray(array, dtype=np.float64).ravel()
    finite = array[np.isfinite(array)]
    if not finite.size:
        raise ValueError("a histogram needs at least one finite value")
    low, high = float(finite.min()), float(finite.max())
    span = (low - 0.5, high + 0.5) if low == high else (low, high)
    counts, edges = np.histogram(finite, bins=bins, range=span)
    histogram = Histogram(
        [float(c) for c in counts],
        [float(e) for e in edges],
        int(finite.size),
        float(finite.sum()),
        float(np.dot(finite, finite)),
        low,
        high,
    )
    return histogram, int(array.size - finite.size)


def histogram_of(values: Any, bins: int = 64) -> tuple[Histogram, int]:
    """The histogram of ``values`` in ``bins`` equal bins, and how many non-finite values were left out."""
    if not isinstance(bins, int) or isinstance(bins, bool) or not 1 <= bins <= MAX_BINS:
        raise ValueError(f"bins must be a whole number from 1 to {MAX_BINS}, got {bins!r}")
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor
        values = values.detach().cpu()
        if str(getattr(values, "dtype", "")) == "torch.bfloat16":
            values = values.float()
        values = values.numpy()
    if hasattr(values, "ravel") and hasattr(values, "dtype"):  # numpy: binned at C speed
        if getattr(values.dtype, "kind", "f") not in "biuf":
            raise TypeError(f"histogram values must be numbers, got an array of {values.dtype}")
        return _numpy_histogram(values, bins)
    numbers = _flat_floats(values)
    finite = [value for value in numbers if math.isfinite(value)]
    skipped = len(numbers) - len(finite)
    if not finite:
        raise ValueError("a histogram needs at least one finite value")
    low, high = min(finite), max(finite)
    if low == high:  # one value: one bin around it, as TensorBoard draws it
        low, high = low - 0.5, high + 0.5
    width = (high - low) / bins
    edges = [low + width * index for index in range(bins)] + [high]
    counts = [0.0] * bins
    for value in finite:
        counts[min(int((value - low) / width), bins - 1)] += 1
    histogram = Histogram(
        counts, edges, len(finite), math.fsum(finite), math.fsum(v * v for v in finite), min(finite), max(finite)
    )
    return histogram, skipped


def histogram_from_counts(counts: Sequence[Any], edges: Sequence[Any]) -> Histogram:
    """A histogram the caller already binned; moments are estimated from the bin centres."""
    counts_list, edges_list = _flat_floats(counts), _flat_floats(edges)
    if len(edges_list) != len(counts_list) + 1:
        raise ValueError(f"edges must have one more entry than counts, got {len(edges_list)} and {len(counts_list)}")
    if not counts_list or len(counts_list) > MAX_BINS:
        raise ValueError(f"counts must have 1 to {MAX_BINS} bins, got {len(counts_list)}")
    if any(not math.isfinite(edge) for edge in edges_list) or any(b <= a for a, b in pairwise(edges_list)):
        raise ValueError("edges must be finite and increasing")
    if any(not math.isfinite(count) or count < 0 for count in counts_list):
        raise ValueError("counts must be finite and not negative")
    centres = [(a + b) / 2 for a, b in pairwise(edges_list)]
    total_count = math.fsum(counts_list)
    filled = [index for index, count in enumerate(counts_list) if count > 0]
    return Histogram(
        counts_list,
        edges_list,
        int(total_count),
        math.fsum(c * x for c, x in zip(counts_list, centres)),
        math.fsum(c * x * x for c, x in zip(counts_list, centres)),
        edges_list[filled[0]] if filled else edges_list[0],
        edges_list[filled[-1] + 1] if filled else edges_list[-1],
    )


def histogram_summary(name: str, histogram: Histogram) -> dict[str, float]:
    """The metrics a backend without histograms stores instead: count, min, max, mean, std."""
    return {
        f"{name}/count": histogram.count,
        f"{name}/min": histogram.min,
        f"{name}/max": histogram.max,
        f"{name}/mean": histogram.mean,
        f"{name}/std": histogram.std,
    }
