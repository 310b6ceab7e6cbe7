"""Lightning checkpoints for the logger: which run wrote one and at which step, the running ``fit``'s
checkpoint, and ``ModelCheckpoint``'s files staged into the run folder and logged as artifacts (``log_model``)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracking_core import Dispatcher


def log_checkpoints(
    run: Dispatcher,
    callback: Any,
    steps: dict[tuple[str, float], int | None],
    logged: dict[str, float],
) -> None:
    """Every checkpoint file of ``callback`` not in ``logged`` yet (or rewritten since), oldest first: staged in
    the run folder's ``logged-checkpoints/`` with a ``checkpoint.json`` beside it, both logged as artifacts
    under ``checkpoints/step-<step>-<tag>/``. ``steps`` holds the step each file was saved at."""
    if not isinstance(run.run_dir, os.PathLike):  # no run folder: nothing to link the files into
        return
    found = checkpoints_of(callback)
    for mtime, path in sorted((os.path.getmtime(path), path) for path in found):
        if logged.get(path) == mtime:
            continue
        score, tag = found[path]
        step = steps.get((path, mtime))
        folder = f"step-{step}-{tag}" if step is not None else f"{tag}-{os.path.splitext(os.path.basename(path))[0]}"
        staged = os.path.join(str(run.run_dir), "logged-checkpoints", folder)
        target = _stage(path, staged)
        metadata = {
            "step": step,
            "score": _number(score),
            "monitor": getattr(callback, "monitor", None),
            "tag": tag,
            "original_filename": os.path.basename(path),
        }
        meta_path = os.path.join(staged, "checkpoint.json")
        with open(meta_path, "w", encoding="utf-8") as file:
            json.dump(metadata, file, indent=1)
        run.log_artifact(target, artifact_path=f"checkpoints/{folder}")
        run.log_artifact(meta_path, artifact_path=f"checkpoints/{folder}")
        logged[path] = mtime


def checkpoints_of(callback: Any) -> dict[str, tuple[Any, str]]:
    """``ModelCheckpoint``'s files now: path -> (score, "latest" | "best" | "best_k"), best first."""
    found: dict[str, tuple[Any, str]] = {}
    for path, score in (getattr(callback, "best_k_models", None) or {}).items():
        found[path] = (score, "best_k")
    if getattr(callback, "best_model_path", ""):
        found[callback.best_model_path] = (getattr(callback, "best_model_score", None), "best")
    if getattr(callback, "last_model_path", "") and callback.last_model_path not in found:
        found[callback.last_model_path] = (getattr(callback, "current_score", None), "latest")
    return {path: value for path, value in found.items() if path and os.path.isfile(path)}


def _number(value: Any) -> float | None:
    """A score as a plain float (Lightning keeps tensors), for JSON."""
    if value is None:
        return None
    try:
        return float(value.item() if hasattr(value, "item") else value)
    except (TypeError, ValueError):
        return None


def _stage(source: str, folder: str) -> str:
    """``source`` in ``folder`` under the same name: a hard link (instant, and it outlives a deletion
    of the original), or a copy when the two are on different file systems."""
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, os.path.basename(source))
    if os.path.lexists(target):
        os.unlink(target)
    try:
        os.link(source, target)
    except OSError:
        import shutil

        shutil.copy2(source, target)
    return target


def run_of_checkpoint(
    ckpt_path: str | os.PathLike[str], logging_dir: str | os.PathLike[str], project: str
) -> str | None:
    """The id of the run of ``project`` under ``logging_dir`` that wrote the Lightning checkpoint, or ``None``.

    Looks at the file's own path and at the folders its callbacks' state names (``ModelCheckpoint``'s
    ``dirpath``, ``best_model_path``, ``last_model_path``); tensors are memory-mapped, not read.
    """

    path = os.path.abspath(os.fspath(ckpt_path))
    checkpoint = _load_checkpoint(path)
    places: list[Any] = [path]
    for state in (checkpoint.get("callbacks") or {}).values() if isinstance(checkpoint, dict) else ():
        if isinstance(state, dict):
            places += [state[key] for key in ("dirpath", "best_model_path", "last_model_path") if state.get(key)]
    project_dir = os.path.abspath(os.path.join(os.fspath(logging_dir), project))
    for place in places:
        if not isinstance(place, str):
            continue
        inside = os.path.relpath(os.path.abspath(place), project_dir)
        run_id = inside.split(os.sep)[0]
        if not inside.startswith(os.pardir) and os.path.isfile(os.path.join(project_dir, run_id, "run.json")):
            return run_id
    return None


def _load_checkpoint(path: str) -> Any:
    """A Lightning checkpoint's contents, tensors memory-mapped (not read)."""
    import torch

    if not os.path.isfile(path):
        raise FileNotFoundError(f"ckpt_path: {path} is not a file")
    try:
        return torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except Exception:  # a checkpoint with pickled objects (hyperparameters): the Trainer loads it the same way
        return torch.load(path, map_location="cpu", mmap=True, weights_only=False)


def checkpoint_step(ckpt_path: str | os.PathLike[str]) -> int | None:
    """The step the Trainer logs at next after restoring the checkpoint (the logger connector's step: the
    training loop's ``_batches_that_stepped``, else the checkpoint's ``global_step``); ``None`` when it has none."""
    checkpoint = _load_checkpoint(os.path.abspath(os.fspath(ckpt_path)))
    if not isinstance(checkpoint, dict):
        return None
    loop = (((checkpoint.get("loops") or {}).get("fit_loop") or {}).get("epoch_loop.state_dict")) or {}
    step = loop.get("_batches_that_stepped") if isinstance(loop, dict) else None
    if step is None:
        step = checkpoint.get("global_step")
    return int(step) if isinstance(step, int) and step >= 0 else None


def ckpt_path_of_fit(logger: Any) -> str | None:
    """The checkpoint a ``Trainer.fit(ckpt_path=...)`` now running with ``logger`` resumes from, or ``None``.

    Lightning opens its loggers' runs (``experiment``, ``log_dir``) in the Trainer's set-up, before it
    restores the checkpoint, and tells a logger nothing about it; the path is a local of the Trainer's
    own frames (``_fit_impl``/``_run``) further up this call, resolved there (``"last"``, ``"best"``) to a file.
    """
    import sys

    frame: Any = sys._getframe(1)
    while frame is not None:
        names = frame.f_code.co_varnames
        if "ckpt_path" in names and "self" in names:
            owner, path = frame.f_locals.get("self"), frame.f_locals.get("ckpt_path")
            if any(candidate is logger for candidate in getattr(owner, "loggers", None) or ()):
                fitting = getattr(getattr(owner, "state", None), "fn", None) == "fit"  # not validate/test/predict
                if fitting and isinstance(path, (str, os.PathLike)) and os.path.isfile(path):
                    return os.fspath(path)
                return None
        frame = frame.f_back
    return None
