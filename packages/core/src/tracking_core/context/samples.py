"""The run folder's own file of system samples, ``system.jsonl``: where the sampler's samples are kept.

Samples are the library's records, not the user's, so they never enter the run's journal or the user's
steps: each line is ``{"index": N, "time": <Unix seconds>, "values": {"system/...": number}}``, ``index``
counting the run's samples from 0 (a resumed run carries on after the last one). ``tracking show``,
``compare`` and ``export`` read them only when asked (``--system``).
"""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path
from typing import Any

SAMPLES_NAME = "system.jsonl"

__all__ = ["SAMPLES_NAME", "SampleFile", "read_samples"]


class SampleFile:
    """Appends samples to ``<run dir>/system.jsonl``, one line each, from the sampler's thread."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / SAMPLES_NAME
        self._lock = threading.Lock()
        self.next_index = len(read_samples(run_dir))

    def append(self, values: dict[str, float], timestamp: float) -> int:
        """Keep one sample; returns its index. A file that cannot be written costs the sample, never the run."""
        with self._lock:
            index, self.next_index = self.next_index, self.next_index + 1
            line = {"index": index, "time": timestamp, "values": {k: v for k, v in values.items() if _finite(v)}}
            try:
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(line) + "\n")
            except OSError:
                pass
            return index


def read_samples(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every sample kept in a run folder, in order; ``[]`` when there is none. A torn last line is left out."""
    path = Path(run_dir) / SAMPLES_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    samples = []
    for line in text.splitlines():
        try:
            sample = json.loads(line)
        except ValueError:
            continue
        if isinstance(sample, dict) and isinstance(sample.get("values"), dict):
            samples.append(sample)
    return samples


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)
