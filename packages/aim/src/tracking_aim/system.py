"""System metrics in Aim: its own resource tracker's settings, and the library's samples where Aim keeps its own.

Aim's ``Run`` samples CPU, memory, disk and GPUs every ``system_tracking_interval`` seconds (10 by default)
into ``__system__<resource>`` series, one per GPU in the context ``{"gpu": <index>}``, each on its own
step count. The library's samples (``system/cpu.percent``, ``system/gpu.0.utilization_percent``, ...) go to
the same place: ``__system__cpu.percent``, ``__system__gpu.utilization_percent`` with ``{"gpu": 0}``, at
step = the sample's index and with the sample's time, so Aim's UI lists them among the run's system metrics.
"""

from __future__ import annotations

from typing import Any

#: Aim's prefix of system series (``aim.ext.resource.configs.AIM_RESOURCE_METRIC_PREFIX``).
SYSTEM_PREFIX = "__system__"
_SAMPLE_PREFIX = "system/"


def run_settings(kwargs: dict[str, Any], system_metrics: bool) -> tuple[dict[str, Any], str | None]:
    """``aim.Run`` kwargs with Aim's own resource tracker off when the library samples instead (and a note
    when that overrides a ``system_tracking_interval`` the user gave); otherwise the kwargs as given, so
    Aim's defaults apply as with accelerate's ``AimTracker``."""
    if not system_metrics:
        return dict(kwargs), None
    note = None
    if kwargs.get("system_tracking_interval") is not None:
        note = (
            f"system_tracking_interval={kwargs['system_tracking_interval']!r} ignored: the run's own system samples "
            f"(system_metrics=True) are stored as Aim's __system__ series instead"
        )
    return {**kwargs, "system_tracking_interval": None}, note


def aim_series(key: str) -> tuple[str, dict[str, Any] | None]:
    """The Aim series of one sample value: its name and context (``{"gpu": i}`` for a GPU's, as Aim's own)."""
    rest = key[len(_SAMPLE_PREFIX) :] if key.startswith(_SAMPLE_PREFIX) else key
    group, _, tail = rest.partition(".")
    index, _, field = tail.partition(".")
    if group == "gpu" and index.isdigit() and field:
        return f"{SYSTEM_PREFIX}gpu.{field}", {"gpu": int(index)}
    return SYSTEM_PREFIX + rest, None


def sample_key(name: str, context: dict[str, Any] | None) -> str:
    """The ``system/...`` name of a stored Aim system series (:func:`aim_series` reversed):
    ``__system__gpu.utilization_percent`` with ``{"gpu": 0}`` -> ``system/gpu.0.utilization_percent``."""
    rest = name[len(SYSTEM_PREFIX) :] if name.startswith(SYSTEM_PREFIX) else name
    gpu = (context or {}).get("gpu")
    if gpu is not None and rest.startswith("gpu"):
        field = rest[len("gpu") :].lstrip(".")
        return f"{_SAMPLE_PREFIX}gpu.{gpu}" + (f".{field}" if field else "")
    return _SAMPLE_PREFIX + rest


def by_context(values: dict[str, float]) -> list[tuple[dict[str, Any] | None, dict[str, float]]]:
    """The sample's values as ``(context, {series name: value})`` groups, the default context first."""
    groups: dict[int | None, tuple[dict[str, Any] | None, dict[str, float]]] = {}
    for key, value in values.items():
        name, context = aim_series(key)
        gpu = context["gpu"] if context else None
        groups.setdefault(gpu, (context, {}))[1][name] = float(value)
    return [groups[gpu] for gpu in sorted(groups, key=lambda gpu: -1 if gpu is None else gpu)]
