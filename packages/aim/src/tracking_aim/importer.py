"""Import Aim runs from a repo, through Aim's own reader (``aim.Repo``).

Aim shows a closed run to its reader only once the repo's index holds it, and indexing writes to the
repo. The source is never written: the repo's ``.aim`` folder is copied to a temporary folder, the copy
is indexed (as ``aim storage reindex`` would) and read, and the copy is removed when the import ends.

Every sequence of a run is read: metrics (``float``/``int``, with their steps and timestamps) become
points; texts, images and distributions become media; the run's params become the config (see :func:`_config`). A sequence
tracked with a ``context`` is named ``"<name> <context dict>"``, as :meth:`AimTracker.read_back_history`
names it. What Aim holds that a journal cannot carry (audio, figures, terminal logs, epochs, system
params) is listed in each run's ``not_carried``.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

from .older.v3_18 import runs_to_index

__all__ = ["read_runs"]

_METRIC_DTYPES = {"float", "int", "number"}
_MEDIA_DTYPES = {
    "aim.image": "image",
    "list(aim.image)": "image",
    "aim.text": "text",
    "list(aim.text)": "text",
    "aim.distribution": "histogram",
}


def _repo_folder(source: Path) -> Path:
    """The ``.aim`` folder of ``source`` (the repo's folder or the ``.aim`` folder itself)."""
    for candidate in (source / ".aim", source):
        if (candidate / "meta" / "chunks").is_dir():
            return candidate
    raise SourceError(str(source), "not an Aim repo (no .aim/meta/chunks)")


def _indexed_copy(aim_folder: Path, into: Path) -> tuple[Any, list[str]]:
    """A reader of a copy of the repo in which every run is indexed, and the runs' hashes."""
    from aim import Repo
    from aim.sdk.index_manager import RepoIndexManager

    shutil.copytree(aim_folder, into / ".aim", ignore=shutil.ignore_patterns("LOCK"))
    hashes = sorted(os.listdir(into / ".aim" / "meta" / "chunks"))
    writer = Repo(str(into))
    manager = RepoIndexManager(writer)
    try:
        for run_hash in runs_to_index(manager, hashes):
            manager.index(run_hash)
    finally:
        for container in list(writer.container_pool.values()):
            container.close()
    return Repo(str(into)), hashes


def _key(name: str, context: dict[str, Any]) -> str:
    return f"{name} {context}" if context else name


def _time(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _sequences(run: Any) -> Iterator[tuple[str, Any, str]]:
    """``(name, Context, dtype)`` of every sequence the run tracked."""
    traces = run.meta_run_tree.subtree("traces").collect()
    for context_index, names in traces.items():
        context = run.idx_to_ctx(context_index)
        for name, info in names.items():
            yield name, context, (info or {}).get("dtype", "float")


def _guarded(items: Iterator[Any], where: Path, copy: tempfile.TemporaryDirectory[str], what: str) -> Iterator[Any]:
    """``items``, an error of Aim's reader in the middle of them raised as a :class:`SourceError` naming
    the source's files (Aim's message names the copy's). Holding ``copy`` keeps the copy on disk until
    every iterator reading it is gone (``TemporaryDirectory`` removes it when collected).
    """
    copy_folder = str(Path(copy.name) / ".aim")
    count = 0
    try:
        for item in items:
            yield item
            count += 1
    except Exception as error:
        message = f"Aim cannot read on ({type(error).__name__}: {error})".replace(copy_folder, str(where.parents[2]))
        raise SourceError(str(where), message, imported=f"{count} {what}") from error


def _points(run: Any, metrics: list[tuple[str, Any]]) -> Iterator[Point]:
    for name, context in metrics:
        metric = run.get_metric(name, context)
        if metric is None:
            continue
        key = _key(name, context.to_dict())
        steps, (values, _epochs, times) = metric.data.items_list()
        for step, value, time in zip(steps, values, times):
            yield Point(key, int(step), value, _time(time))


def _media_of(value: Any, kind: str, key: str, step: int, time: float | None) -> Iterator[Media]:
    for item in value if isinstance(value, list) else [value]:
        if kind == "image":
            yield Media("image", key, step, bytes(item.storage["data"].load()), time)
        elif kind == "text":
            yield Media("text", key, step, str(item.data), time)
        else:
            counts, edges = item.to_np_histogram()
            yield Media("histogram", key, step, {"counts": counts.tolist(), "edges": edges.tolist()}, time)


def _media(run: Any, sequences: list[tuple[str, Any, str]]) -> Iterator[Media]:
    getters = {
        "image": run.get_image_sequence,
        "text": run.get_text_sequence,
        "histogram": run.get_distribution_sequence,
    }
    for name, context, kind in sequences:
        sequence = getters[kind](name, context)
        if sequence is None:
            continue
        key = _key(name, context.to_dict())
        steps, (values, *rest) = sequence.data.items_list()
        times = rest[-1] if rest else [None] * len(steps)
        for step, value, time in zip(steps, values, times):
            yield from _media_of(value, kind, key, int(step), _time(time))


def _unseen_parts(run: Any, metrics: list[tuple[str, Any]], media: list[tuple[str, Any, str]]) -> list[str]:
    """Epochs of metric points and image captions, found before the points stream (a journal has neither).

    Only the epoch column of each metric is read, and the images' records without their pixels.
    """
    notes = []
    for name, context in metrics:
        metric = run.get_metric(name, context)
        if metric is None:
            continue
        _steps, (epochs,) = metric.data.view("epoch").items_list()
        if any(_time(epoch) is not None for epoch in epochs):
            notes.append(f"the epoch of each point of {_key(name, context.to_dict())!r}")
    for name, context, kind in media:
        sequence = run.get_image_sequence(name, context) if kind == "image" else None
        if sequence is None:
            continue
        _steps, (values, *_rest) = sequence.data.items_list()
        items = [item for value in values for item in (value if isinstance(value, list) else [value])]
        if any(getattr(item, "caption", "") for item in items):
            notes.append(f"image captions ({_key(name, context.to_dict())})")
    return notes


def _config(params: dict[str, Any]) -> dict[str, Any]:
    """The run's params as a config: ``run["hparams"]`` (where Aim's docs, Accelerate and this library put
    it) at the top, the run's other params beside it (one named like a key of ``hparams`` as ``params.<name>``).
    """
    hparams = params.get("hparams")
    config: dict[str, Any] = dict(hparams) if isinstance(hparams, dict) else {}
    for key, value in params.items():
        if key.startswith("__") or (key == "hparams" and isinstance(hparams, dict)):
            continue
        config[f"params.{key}" if key in config else key] = value
    return config


def _read_run(run: Any, aim_folder: Path, copy: tempfile.TemporaryDirectory[str]) -> SourceRun:
    metrics: list[tuple[str, Any]] = []
    media: list[tuple[str, Any, str]] = []
    not_carried: list[str] = []
    for name, context, dtype in _sequences(run):
        if dtype in _METRIC_DTYPES:
            metrics.append((name, context))
        elif dtype in _MEDIA_DTYPES:
            media.append((name, context, _MEDIA_DTYPES[dtype]))
        else:
            not_carried.append(f"sequence {_key(name, context.to_dict())!r} of Aim type {dtype!r}")
    not_carried.extend(_unseen_parts(run, metrics, media))
    params = run[...] or {}
    config = _config(params)
    hidden = sorted(key for key in params if key.startswith("__"))
    if hidden:
        not_carried.append(f"Aim's own params: {', '.join(hidden)}")
    tags: dict[str, str] = {}
    if run.tags:
        tags["tags"] = ",".join(str(tag) for tag in run.tags)
    if run.description:
        tags["description"] = str(run.description)
    if run.archived:
        tags["archived"] = "true"
    artifacts = getattr(run, "artifacts", None)
    if artifacts:
        not_carried.append(f"logged artifacts (stored outside the repo): {', '.join(sorted(artifacts))}")
    location = f"{aim_folder}#{run.hash}"
    sequences = aim_folder / "seqs" / "chunks" / run.hash
    return SourceRun(
        backend="aim",
        source_id=run.hash,
        name=run.name or None,
        project=run.experiment or None,
        started=run.creation_time,
        ended=run.end_time,
        status="running" if run.active else "finished",
        config=config,
        tags=tags,
        points=_guarded(_points(run, metrics), sequences, copy, "points"),
        media=_guarded(_media(run, media), sequences, copy, "media"),
        not_carried=not_carried,
        location=location,
    )


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Each run of the Aim repo at ``source`` (the folder holding ``.aim``, or ``.aim`` itself).

    Points are read lazily, a sequence at a time, from an indexed copy of the repo that is removed once
    this iterator and every run's ``points`` and ``media`` are exhausted or dropped.
    """
    aim_folder = _repo_folder(Path(source))
    scratch = tempfile.TemporaryDirectory(prefix="tracking-aim-import-")
    try:
        repo, hashes = _indexed_copy(aim_folder, Path(scratch.name))
    except Exception as error:
        raise SourceError(str(aim_folder), f"Aim cannot open the repo ({type(error).__name__}: {error})") from error
    done: list[str] = []
    for run_hash in hashes:
        try:
            run = repo.get_run(run_hash)
            if run is None:
                raise LookupError("not in the repo's index after indexing")
            found = _read_run(run, aim_folder, scratch)
        except Exception as error:
            imported = f"{len(done)} run(s): {', '.join(done)}" if done else "no run"
            message = f"Aim cannot read run {run_hash} ({type(error).__name__}: {error})"
            message = message.replace(str(Path(scratch.name) / ".aim"), str(aim_folder))
            container = "seqs" if f"/seqs/chunks/{run_hash}" in message else "meta"
            raise SourceError(str(aim_folder / container / "chunks" / run_hash), message, imported=imported) from error
        yield found
        done.append(run_hash)
