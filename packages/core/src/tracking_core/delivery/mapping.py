"""Per-backend value mapping: the keys a backend accepts and the values it stores faithfully.

The dispatcher hands every backend the same flat values; what one SDK refuses (MLflow's key
characters, SwanLab's slashes) or mangles (NaN/inf on ClearML and Comet) is decided here, once per
key, warned about once and recorded in that backend's report.
"""

from __future__ import annotations

from typing import Any

from ..contract.tracker import GeneralTracker
from ..intake.record import Record
from ..intake.values import is_non_finite
from ..notices import warn_once
from ..report import BackendReport


class BackendValues:
    def __init__(self, tracker: GeneralTracker, report: BackendReport) -> None:
        cls = type(tracker)
        self._tracker = tracker
        self._name = tracker.name
        self._report = report
        self._renames_keys = cls.sanitize_key is not GeneralTracker.sanitize_key
        self._filters_non_finite = not getattr(cls, "accepts_non_finite", True)
        self._key_map: dict[str, str] = {}
        #: (seq, key) of each refused point reported: a record isolated again (after an outage, in a
        #: replay of the spill) is not reported twice
        self._refused: set[tuple[int | None, str]] = set()

    def refused(self, key: str, record: Record, reason: str) -> None:
        """One report entry per point the backend refused: several at one key are several losses."""
        point = (record.seq, key)
        if record.seq is not None and point in self._refused:
            return
        self._refused.add(point)
        self._report.refused_points.append((key, record.step, reason))

    def prepare(self, values: dict[str, Any]) -> dict[str, Any]:
        """This backend's copy of a metric record."""
        if not (self._renames_keys or self._filters_non_finite):
            return dict(values)
        out = {}
        for key, value in values.items():
            if self._filters_non_finite and is_non_finite(value):
                warn_once(
                    self._name,
                    key,
                    f"{value!r} is not stored by this backend; the point is skipped",
                    reason="non-finite",
                )
                self._report.skipped_values[key] = "non-finite value"
                continue
            if self._renames_keys:
                mapped = self._key_map.get(key)
                if mapped is None:
                    mapped = self._map_key(key)
                key = mapped
            out[key] = value
        return out

    def _map_key(self, key: str) -> str:
        try:
            mapped = self._tracker.sanitize_key(key)
        except Exception as error:
            mapped = key
            warn_once(self._name, key, f"sanitize_key failed ({error!r}); key passed on unchanged", reason="sanitize")
        if mapped != key:
            clash = [original for original, other in self._key_map.items() if other == mapped and original != key]
            note = f" (also the name of {clash[0]!r}: their points share one series)" if clash else ""
            warn_once(
                self._name, key, f"stored as {mapped!r}: the backend refuses the original key{note}", reason="renamed"
            )
            self._report.key_map[key] = mapped
        self._key_map[key] = mapped
        return mapped
