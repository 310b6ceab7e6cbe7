"""The training process's copy of a tracker that runs in the delivery process (``delivery="process"``).

``get_tracker(name)`` hands the user the tracker object of this process, which never starts: its
run folder, run id and the like would be the placeholders of a tracker that was only constructed.
Once the backend has started over there (and again when it finished), the delivery process sends
the tracker's plain values (numbers, strings, paths and containers of them, public properties
included); :func:`adopt` puts them on the copy here, and makes every public property it could not
send (the SDK object, a live client) raise a clear error instead of answering with a stand-in.
"""

from __future__ import annotations

import pickle
from pathlib import PurePath
from typing import Any

from ..contract.tracker import GeneralTracker

_PLAIN = (type(None), bool, int, float, str, PurePath)
_MAX_BYTES = 64 * 1024


def _plain(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _PLAIN):
        return True
    if depth > 3:
        return False
    if isinstance(value, (list, tuple)):
        return all(_plain(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _plain(item, depth + 1) for key, item in value.items())
    return False


def _public_properties(cls: type) -> list[str]:
    return [name for name in dir(cls) if not name.startswith("_") and isinstance(getattr(cls, name, None), property)]


def tracker_state(tracker: GeneralTracker) -> dict[str, Any]:
    """What of ``tracker`` can cross to the training process: its plain attributes and public properties."""
    state = {name: value for name, value in vars(tracker).items() if _plain(value)}
    for name in _public_properties(type(tracker)):
        if name == "tracker":  # the SDK object: never plain, and it may wait for start-up
            continue
        try:
            value = getattr(tracker, name)
        except Exception:
            continue
        if _plain(value):
            state[name] = value
    try:
        if len(pickle.dumps(state)) > _MAX_BYTES:
            return {}
    except Exception:
        return {}
    return state


def adopt(tracker: GeneralTracker, state: dict[str, Any]) -> None:
    """Give ``tracker`` (of the training process) the values its twin in the delivery process has."""
    cls = type(tracker)
    base = getattr(cls, "_remote_view_of", cls)
    properties = set(_public_properties(base))
    tracker.__dict__.update({name: value for name, value in state.items() if name not in properties})
    namespace: dict[str, Any] = {"_remote_view_of": base, "__module__": base.__module__}
    for name in properties:
        namespace[name] = property(_known(state[name]) if name in state else _unknown(name))
    tracker.__class__ = type(base.__name__, (base,), namespace)


def _known(value: Any) -> Any:
    def read(self: GeneralTracker) -> Any:
        return value

    return read


def _unknown(name: str) -> Any:
    def read(self: GeneralTracker) -> Any:
        return _lives_elsewhere(self, name)

    return read


def _lives_elsewhere(tracker: GeneralTracker, name: str) -> Any:
    raise RuntimeError(
        f"{tracker.name}.{name} lives in the delivery process (delivery='process'), which holds the "
        f"{tracker.name} SDK; use delivery='thread' to work with it in this process"
    )
