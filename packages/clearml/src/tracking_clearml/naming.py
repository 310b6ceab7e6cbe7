"""How a metric key becomes ClearML's (title, series) and back, and how a text value becomes a console line.

Shared by the tracker (writing) and :mod:`tracking_clearml.reader` (reading), so neither imports the other.

A key with a ``/`` splits at the last one (``train/loss`` -> title ``train``, series ``loss``), as
ClearML's own TensorBoard binding splits tags. Any other key is mapped as accelerate's
``ClearMLTracker`` maps it: the prefixes ``eval_``, ``test_`` and ``train_`` become the series
(``eval_loss`` -> title ``loss``, series ``eval``), and a key without one goes to the ``train`` series
(``loss`` -> title ``loss``, series ``train``), so the train and eval curves of a value share a plot.
"""

from __future__ import annotations

import json

#: The key prefixes accelerate maps onto a series, and the series of a key without one.
SERIES_PREFIXES = ("eval", "test", "train")
DEFAULT_SERIES = "train"


def title_series(key: str) -> tuple[str, str]:
    """ClearML's (title, series) for a metric key (see the module docstring)."""
    title, _, series = key.rpartition("/")
    if title and series:
        return title, series
    for prefix in SERIES_PREFIXES:
        rest = key[len(prefix) + 1 :]
        if key.startswith(f"{prefix}_") and rest:
            return rest, prefix
    return key, DEFAULT_SERIES


def key_of(title: str, series: str, keys: dict[tuple[str, str], str] | None = None) -> str:
    """The metric key back from a (title, series) pair; ``keys`` (pair -> key, as the tracker records it for
    pairs this rule would not give back) wins.

    Without ``keys`` the rule prefers accelerate's names: ``(loss, train)`` -> ``loss``, ``(loss, eval)`` ->
    ``eval_loss``, other pairs ``title/series``; ``train_loss`` and ``loss/eval`` are such ambiguous keys.
    """
    if keys and (title, series) in keys:
        return keys[(title, series)]
    if series == DEFAULT_SERIES:
        return title
    if series in SERIES_PREFIXES:
        return f"{series}_{title}"
    return f"{title}/{series}"


def text_line(key: str, value: str, step: int | None) -> str:
    """The console-log line for a string value: ``[step 3] note: words`` (``[summary]`` without a step).

    A value with a line break, or one that starts with a double quote, is written as a JSON string so
    that every value stays on one line and reads back exactly.
    """
    if "\n" in value or "\r" in value or value.startswith('"'):
        value = json.dumps(value, ensure_ascii=False)
    return f"[{'summary' if step is None else f'step {step}'}] {key}: {value}"


#: The configuration object where the tracker records ``[title, series, key]`` for each key that
#: :func:`key_of` alone would not give back (empty in most runs), so readers get the exact keys.
KEY_MAP_OBJECT = "tracking keys"

#: The titles ClearML's resource monitor reports its scalars under (``ResourceMonitor._title_machine`` /
#: ``_title_gpu``): the task's system metrics, which ClearML's web app shows apart from the user's scalars.
MONITOR_MACHINE = ":monitor:machine"
MONITOR_GPU = ":monitor:gpu"
MONITOR_PREFIX = ":monitor:"
SAMPLE_PREFIX = "system/"


def monitor_title_series(key: str) -> tuple[str, str]:
    """Where a sample of the library's sampler goes: ``system/gpu.0.utilization_percent`` ->
    (``:monitor:gpu``, ``gpu.0.utilization_percent``), anything else under ``:monitor:machine``."""
    series = key[len(SAMPLE_PREFIX) :] if key.startswith(SAMPLE_PREFIX) else key
    return (MONITOR_GPU if series.startswith("gpu.") else MONITOR_MACHINE), series
