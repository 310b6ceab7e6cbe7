"""Read a run back with Aim's own reader (``aim.Repo``), for the package's tests.

Aim's query API only sees runs that are in the repo's index; a closed run gets there when ``aim up``'s
watcher or ``aim storage reindex`` indexes it. ``open_repo`` indexes, as ``aim storage reindex`` does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def open_repo(path: str | Path) -> Any:
    """An ``aim.Repo`` in which every run, closed ones included, is indexed and so visible."""
    from aim import Repo
    from aim.sdk.index_manager import RepoIndexManager

    writer = Repo(str(path))
    # A fresh manager, not ``get_index_manager``: its pooled Repo would keep the index open for writing,
    # and a reader opened afterwards may then miss the newest entries.
    manager = RepoIndexManager(writer)
    # Not ``writer.list_all_runs()``: it is cached for 0.5 s per repo path and misses a run just closed.
    # Aim 3.18 finalizes only a run with a progress file (and fails on one already indexed);
    # later releases have no run_needs_indexing and index any run.
    needs_indexing = getattr(manager, "run_needs_indexing", None)
    for run_hash in sorted(os.listdir(os.path.join(writer.path, "meta", "chunks"))):
        if needs_indexing is None or needs_indexing(run_hash):
            manager.index(run_hash)
    for container in list(writer.container_pool.values()):
        container.close()  # flushes the index and releases its lock
    return Repo(str(path))


def get_run(path: str | Path, run_hash: str) -> Any:
    run = open_repo(path).get_run(run_hash)
    assert run is not None, f"run {run_hash} not found in {path}"
    return run


def metrics(run: Any) -> dict[str, dict[int, float]]:
    """``{name: {step: value}}`` for every metric series in the default context, Aim's own system series
    (``__system__*``, its resource tracker's) left out."""
    out: dict[str, dict[int, float]] = {}
    for metric in run.metrics():
        if metric.context.to_dict() or metric.name.startswith("__system__"):
            continue
        steps, (values, _epochs, _times) = metric.data.items_list()
        out[metric.name] = {int(step): value for step, value in zip(steps, values)}
    return out


def sequence(run: Any, kind: str, name: str, context: dict | None = None) -> dict[int, Any]:
    """``{step: value}`` of a text/image/figure sequence (``kind`` is ``text``, ``image`` or ``figure``)."""
    from aim.storage.context import Context

    found = getattr(run, f"get_{kind}_sequence")(name, Context(context or {}))
    if found is None:
        return {}
    steps, (values, *_rest) = found.data.items_list()
    return {int(step): value for step, value in zip(steps, values)}


def sequence_names(run: Any, dtypes: tuple[str, ...]) -> dict[str, list[dict]]:
    """``{name: [context dicts]}`` of the run's sequences of the given Aim data types."""
    out: dict[str, list[dict]] = {}
    for name, context, _run in run.iter_sequence_info_by_type(dtypes):
        out.setdefault(name, []).append(context.to_dict())
    return out


def parse_markdown_table(text: str) -> tuple[list[str], list[list[str]]]:
    def cells(line: str) -> list[str]:
        out, current, index = [], "", 0
        body = line.strip()[1:]
        while index < len(body):
            char = body[index]
            if char == "\\" and index + 1 < len(body):
                current += body[index + 1]
                index += 2
                continue
            if char == "|":
                out.append(current.strip())
                current = ""
            else:
                current += char
            index += 1
        return out

    lines = text.splitlines()
    return cells(lines[0]), [cells(line) for line in lines[2:]]
