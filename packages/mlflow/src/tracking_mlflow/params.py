"""Which config keys become MLflow params, and under which names.

MLflow keeps a param's first value for good and refuses values over its length limit, so a config
logged again (``log_config``, a resumed run) adds only new keys; everything else is left out with a
warning and a report note, and the whole merged config stays in the run's ``config.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracking_core.kit import flatten_config, stringify, warn_once

if TYPE_CHECKING:
    from .tracker import MLflowTracker


def new_params(tracker: MLflowTracker, values: dict[str, Any], existing: dict[str, str]) -> dict[str, str]:
    """The params ``values`` adds to a run that has ``existing``: flattened, stringified, renamed where MLflow
    refuses the key, the first of two keys that land on one name."""
    limit = tracker.limits["MAX_PARAM_VAL_LENGTH"]
    params: dict[str, str] = {}
    for key, value in flatten_config(values).items():
        text = stringify(value)
        if len(text) > limit:  # left out, as accelerate does: a cut value would read as the real one
            warn_once(
                tracker.name,
                key,
                f"parameter value of {len(text)} characters is longer than MLflow's limit of {limit}: "
                "not a param (the full value is in the run's config.json artifact)",
                reason="param-too-long",
            )
            tracker.add_note(f"param {key} left out: its value is longer than MLflow takes; config.json has it")
            continue
        name = tracker.sanitize_key(key)
        if name != key:
            warn_once(tracker.name, key, f"stored as param {name!r}: MLflow refuses the original", reason="renamed")
        if name in params:
            warn_once(
                tracker.name,
                key,
                f"parameter name {name!r} is taken by another key; only the first is a param (both are in config.json)",
                reason="param-clash",
            )
            continue
        if name in existing:  # MLflow params are immutable
            if existing[name] != text:
                warn_once(
                    tracker.name,
                    key,
                    f"the run already has {name}={existing[name]!r}; MLflow params "
                    "cannot change, the new value is only in config.json",
                    reason="param-immutable",
                )
                tracker.add_note(f"param {name} keeps its first value in MLflow; config.json has the new one")
            continue
        params[name] = text
    return params
