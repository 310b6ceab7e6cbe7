"""Every run a job left in each backend, read back with the backend's own reader (never through our trackers).

A run is reported as a :class:`StoredRun`: its name in the backend, the group the backend files it under
(``None`` when the backend shows no group) and its ``rank`` and ``reduced`` series (step -> every value
stored at that step, so a point stored twice shows twice). ``train.py`` logs the writer's rank as ``rank``:
the values say which process wrote a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class StoredRun:
    backend: str
    name: str
    group: str | None = None
    series: dict[str, dict[int, list[float]]] = field(default_factory=dict)

    def add(self, key: str, step: int, value: float) -> None:
        self.series.setdefault(key, {}).setdefault(int(step), []).append(float(value))

    @property
    def points(self) -> int:
        return sum(len(values) for values in self.series.get("rank", {}).values())

    @property
    def writers(self) -> set[int]:
        """The ranks whose points this run holds."""
        return {int(value) for values in self.series.get("rank", {}).values() for value in values}


def read_all(backends: list[str], logging_dir: Path, project: str) -> dict[str, list[StoredRun]]:
    readers = {"jsonl": jsonl_runs, "tensorboard": tensorboard_runs, "mlflow": mlflow_runs, "aim": aim_runs}
    return {backend: readers[backend](logging_dir, project) for backend in backends}


def jsonl_runs(logging_dir: Path, project: str) -> list[StoredRun]:
    """One run per journal: ``<run id>/journal.jsonl``, or ``<run id>/rank-<N>/journal.jsonl`` per rank."""
    from tracking_core.store.journal import JournalSummary

    runs = []
    for path in sorted((logging_dir / project).rglob("journal.jsonl")):
        relative = path.parent.relative_to(logging_dir / project)
        run = StoredRun("jsonl", relative.as_posix(), group=relative.parts[0] if len(relative.parts) > 1 else None)
        for key, points in JournalSummary(path).metrics.items():
            for step, value in points:
                run.add(key, step, value)
        runs.append(run)
    return runs


def tensorboard_runs(logging_dir: Path, project: str) -> list[StoredRun]:
    """One run per folder holding event files, as TensorBoard lists them; read with its ``EventFileLoader``."""
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.util import tensor_util

    folders = sorted({path.parent for path in (logging_dir / project).rglob("events.out.tfevents.*")})
    runs = []
    for folder in folders:
        relative = folder.relative_to(logging_dir / project)
        group = relative.parts[0] if len(relative.parts) > 1 else None
        run = StoredRun("tensorboard", relative.as_posix(), group=group)
        for path in sorted(folder.glob("events.out.tfevents.*")):
            for event in event_file_loader.EventFileLoader(str(path)).Load():
                for value in event.summary.value:
                    array = tensor_util.make_ndarray(value.tensor)
                    if array.size == 1 and array.dtype.kind in "fiu":
                        run.add(value.tag, event.step, float(array))
        runs.append(run)
    return runs


def mlflow_runs(logging_dir: Path, project: str) -> list[StoredRun]:
    """Every run of the project's experiment in the sqlite store, through a fresh ``MlflowClient``."""
    return mlflow_runs_at(f"sqlite:///{logging_dir.resolve()}/mlflow.db", project)


def mlflow_runs_at(tracking_uri: str, experiment: str) -> list[StoredRun]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    runs = []
    for info in client.search_runs([found.experiment_id], max_results=1000):
        tags = info.data.tags
        group = tags.get("mlflow.parentRunId") or tags.get("group") or tags.get("tracking.group")
        run = StoredRun("mlflow", info.info.run_name, group=group)
        for key in info.data.metrics:
            for metric in client.get_metric_history(info.info.run_id, key):
                run.add(key, metric.step, metric.value)
        runs.append(run)
    return runs


def aim_runs(logging_dir: Path, project: str) -> list[StoredRun]:
    return aim_runs_at(logging_dir, project)


def aim_runs_at(repo_path: Path, experiment: str) -> list[StoredRun]:
    """Every run of the experiment in the Aim repo, through ``aim.Repo`` once each run is indexed."""
    from aim import Repo
    from aim.sdk.index_manager import RepoIndexManager

    if not (Path(repo_path) / ".aim").exists():
        return []
    writer = Repo(str(repo_path))
    manager = RepoIndexManager(writer)  # as `aim storage reindex`: closed runs become visible to the reader
    for run_hash in sorted(os.listdir(os.path.join(writer.path, "meta", "chunks"))):
        manager.index(run_hash)
    for container in list(writer.container_pool.values()):
        container.close()
    runs = []
    for stored in Repo(str(repo_path)).iter_runs():
        if stored.experiment != experiment:
            continue
        tags = sorted(getattr(tag, "name", tag) for tag in stored.props.tags)  # Tag objects or names
        group = next((tag for tag in tags if not tag.startswith("rank")), None)
        run = StoredRun("aim", stored.name or stored.hash, group=group)
        for metric in stored.metrics():
            if metric.context.to_dict():
                continue
            steps, (values, _epochs, _times) = metric.data.items_list()
            for step, value in zip(steps, values):
                run.add(metric.name, step, value)
        runs.append(run)
    return runs
