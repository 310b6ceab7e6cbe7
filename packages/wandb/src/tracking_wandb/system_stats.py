"""The library's system samples where W&B keeps its own: the run's system metrics, off the history.

W&B's monitor (``wandb-symon``) sends each sample to ``wandb-core`` as a ``StatsRecord`` -- a timestamp
and ``key -> JSON value`` items -- which the ``.wandb`` file stores apart from the history and ``wandb
sync`` uploads as the run's *System* charts, on a time axis. History steps are never touched, so W&B has
nothing to drop or warn about (it drops a history step lower than the last one).

W&B has no public call that sends a stats record: it goes through the run's interface to ``wandb-core``
(:func:`tracking_wandb.run_metadata.interface_of`), as the SDK's own client-side stats did; the message is
built with the SDK's proto class, found by feature detection in every release this backend supports.
"""

from __future__ import annotations

from typing import Any

from .run_metadata import interface_of

#: The library's sample names start with it; W&B's own stats keys have no prefix (``cpu``, ``gpu.0.gpu``)
#: and its charts show them as ``system/<key>``, so the prefix is left to W&B.
LIBRARY_PREFIX = "system/"


def stats_key(key: str) -> str:
    """``system/cpu.percent`` -> ``cpu.percent``: W&B shows it as ``system/cpu.percent``."""
    return key[len(LIBRARY_PREFIX) :] if key.startswith(LIBRARY_PREFIX) else key


def stats_message(values: dict[str, float], timestamp: float) -> Any:
    """One ``StatsRecord`` of type ``SYSTEM`` stamped with the sample's time."""
    import json

    from wandb.proto import wandb_internal_pb2 as pb

    stats = pb.StatsRecord(stats_type=pb.StatsRecord.StatsType.SYSTEM)
    stats.timestamp.FromNanoseconds(int(timestamp * 1e9))
    for key, value in values.items():
        item = stats.item.add()
        item.key = stats_key(key)
        item.value_json = json.dumps(value)
    return stats


def publish(run: Any, values: dict[str, float], timestamp: float) -> None:
    """Hand one sample to ``wandb-core`` as the run's system metrics (raises when the SDK's channel changed)."""
    interface = interface_of(run)
    interface._publish(interface._make_record(stats=stats_message(values, timestamp)))
