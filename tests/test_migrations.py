"""Migrations between trackers, end to end: for every backend, a run written with its own SDK (not through
this library) is imported, replayed into two other backends and read back with their readers.

Each source goes to the next two backends of :data:`BACKENDS` (cyclically), so every backend is a
target twice; a failure names the pair (``test_...[wandb->comet_ml]``). What each check reads:

* the points, with the target tracker's own ``read_back_history`` (the reader the round-trip test
  uses): every point of the imported run once, at its step, with its value (to float32 where
  TensorBoard is either end);
* the config, and the times where the target takes the original ones (``wants_timestamps``: MLflow,
  TensorBoard, Aim), with the target's importer, which reads the target's store through its SDK;
* a second replay sends nothing.

The pairs not migrated here are covered by the two halves every backend's cell proves
(:mod:`tracking_core.testing.transfer`); :func:`coverage` says which covers what, and the table in
docs/moving-runs.md must say the same. The file needs every backend's SDK: it runs in the ``migrate``
environment (``hatch run migrate:run``, a step of ``.ci/run``) with the worked migrations of the docs,
and is skipped in the one-backend cells.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BACKENDS = ("tensorboard", "mlflow", "aim", "trackio", "wandb", "comet_ml", "clearml", "swanlab", "dvclive")
#: the migrations of the docs (tests/test_worked_migrations.py), run in the same step
WORKED = {("wandb", "mlflow"), ("tensorboard", "aim")}
#: the backends that keep values as float32
FLOAT32 = {"tensorboard"}
ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "moving-runs.md"


def targets(source: str) -> tuple[str, str]:
    """The two backends ``source``'s run is migrated into: the next two of :data:`BACKENDS`."""
    index = BACKENDS.index(source)
    return BACKENDS[(index + 1) % len(BACKENDS)], BACKENDS[(index + 2) % len(BACKENDS)]


MIGRATIONS = [(source, target) for source in BACKENDS for target in targets(source)]


def coverage(source: str, target: str) -> str:
    """What proves ``source -> target``: this file, the docs' worked migration, or the two halves."""
    if (source, target) in MIGRATIONS:
        return "migrated"
    if (source, target) in WORKED:
        return "worked"
    return "halves"


# -- the matrix statement (no SDK needed) -----------------------------------------------------------


def test_every_backend_is_a_source_once_and_a_target_twice() -> None:
    packages = {path.parent.name for path in (ROOT / "packages").glob("*/pyproject.toml")} - {"core"}
    assert sorted(BACKENDS) == sorted(packages)
    assert all(target != source for source, target in MIGRATIONS)
    assert {target: sum(t == target for _, t in MIGRATIONS) for target in BACKENDS} == dict.fromkeys(BACKENDS, 2)


def test_every_pair_not_migrated_here_has_both_halves() -> None:
    """An import half (the SDK's run from :mod:`tracking_core.testing.sdk_runs`, imported) in the source's
    package, and the replay half (tests/test_round_trip.py) in the target's cell."""
    cells = re.search(
        r"\[\[tool\.hatch\.envs\.test\.matrix\]\]\nbackend = \[(.*?)\]", (ROOT / "pyproject.toml").read_text()
    )
    assert cells, "pyproject.toml has no test matrix"
    cell_backends = set(re.findall(r'"(\w+)"', cells.group(1)))
    assert (
        "def test_the_canonical_journal_replays_into_this_backend"
        in (ROOT / "tests" / "test_round_trip.py").read_text()
    )
    for backend in BACKENDS:
        assert backend in cell_backends, f"{backend} has no test cell, so no replay half"
        tests = "".join(path.read_text() for path in (ROOT / "packages" / backend / "tests").glob("test_import*.py"))
        assert f"write_{backend}" in tests, f"packages/{backend}/tests/test_import*.py import no run its SDK wrote"


def documented_matrix() -> dict[tuple[str, str], str]:
    """The table of docs/moving-runs.md's "Which test covers each pair": ``{(source, target): word}``."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"### Which test covers each pair\n.*?\n(\|.*?)(?:\n\n|\n?\Z)", text, re.S)
    assert match, "docs/moving-runs.md has no table under 'Which test covers each pair'"
    rows = [[cell.strip().strip("`") for cell in line.strip("|").split("|")] for line in match.group(1).splitlines()]
    header, body = rows[0], rows[2:]
    words = {"**migrated**": "migrated", "worked": "worked", "halves": "halves", "·": "halves"}
    return {(row[0], target): words.get(cell, cell) for row in body for target, cell in zip(header[1:], row[1:])}


def test_the_docs_state_which_test_covers_each_pair() -> None:
    assert documented_matrix() == {(s, t): coverage(s, t) for s in BACKENDS for t in BACKENDS}


# -- the migrations (every SDK) --------------------------------------------------------------------

MISSING = [backend for backend in BACKENDS if importlib.util.find_spec(f"tracking_{backend}") is None]


@pytest.fixture(scope="module", autouse=True)
def _elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """What an SDK puts in the working directory by default (``./mlruns``, ``.dvc``) lands in a scratch folder."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("cwd"))
        yield


@pytest.fixture(scope="module")
def every_sdk() -> None:
    """Skips in a cell without every backend; fails where the migrations must run (``TRACKING_MIGRATIONS``)."""
    if MISSING:
        reason = f"needs every backend (missing: {', '.join(MISSING)}): hatch run migrate:run"
        if os.environ.get("TRACKING_MIGRATIONS"):
            pytest.fail(reason)
        pytest.skip(reason)


def numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class Imported:
    """A source run after ``tracking import``: its run folder and what the journal holds."""

    run_dir: Path
    points: dict[str, dict[int, float]]  # every numeric series of the journal
    times: dict[str, dict[int, float]]
    config: dict[str, Any]
    histograms: set[str]  # names of the histograms (MLflow, for one, keeps their statistics as series)
    images: dict[str, int]  # images per key


def journal_of(run_dir: Path) -> Imported:
    from tracking_core.store.journal import JournalSummary, read_journal

    summary = JournalSummary(run_dir)
    points: dict[str, dict[int, float]] = {}
    for key, series in summary.metrics.items():
        steps = [step for step, value in series if numeric(value)]
        assert len(steps) == len(set(steps)), f"{key}: a step imported twice: {steps}"
        if steps:
            points[key] = {step: value for step, value in series if numeric(value)}
    times: dict[str, dict[int, float]] = {}
    histograms = set()
    images: dict[str, int] = {}
    for record in read_journal(summary.path):
        if record["type"] == "metrics" and record.get("time") is not None:
            for key in record["values"]:
                times.setdefault(key, {})[record["step"]] = record["time"]
        elif record["type"] == "histogram":
            histograms.add(record["name"])
        elif record["type"] == "images":
            for key, files in record["images"].items():
                images[key] = images.get(key, 0) + len(files)
    return Imported(run_dir, points, times, dict(summary.config), histograms, images)


def same_values(got: float, want: float, float32: bool) -> bool:
    return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-30) if float32 else got == want


def write_and_import(source: str, folder: Path, runs: Path) -> Imported:
    """``source``'s run written with its SDK, imported with ``tracking import``, checked against what was written."""
    from tracking_core.cli import main
    from tracking_core.testing.sdk_runs import write

    sdk = write(source, folder)
    assert main(["import", source, str(sdk.source), "--logging-dir", str(runs), "--quiet"]) == 0
    found = sorted(path.parent for path in runs.glob("*/*/run.json"))
    # the Trackio store holds a second, one-point run beside the written one
    run_dir = max(found, key=lambda path: sum(len(series) for series in journal_of(path).points.values()))
    run = journal_of(run_dir)
    for key, want in sdk.points.items():
        assert key in run.points, f"{key!r} not imported; the journal has {sorted(run.points)}"
        got = run.points[key]
        assert sorted(got) == sorted(want), f"{key}: steps {sorted(got)} != {sorted(want)}"
        assert all(same_values(got[step], value, sdk.float32) for step, value in want.items()), (
            f"{key}: {got} != {want}"
        )
        assert sorted(run.times.get(key, {})) == sorted(want), f"{key}: a point without its time"
        for step in want:
            if sdk.times is not None:  # the writer chose the times
                assert round(run.times[key][step] * 1000) == round(sdk.times[key][step] * 1000), (key, step)
            else:  # the SDK's clock, while the writer ran (not the time of the import)
                assert sdk.written[0] - 0.002 <= run.times[key][step] <= sdk.written[1], (key, step, sdk.written)
    assert {key: run.config.get(key) for key in sdk.config} == sdk.config, run.config
    assert sum(run.images.values()) == sdk.images, run.images
    return run


@pytest.fixture(scope="module")
def imported(every_sdk: None, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Imported]:
    """``imported(source)``: the source's run, written and imported once for both of its migrations."""
    done: dict[str, Imported | Exception] = {}

    def get(source: str) -> Imported:
        if source not in done:
            try:
                done[source] = write_and_import(
                    source, tmp_path_factory.mktemp(f"{source}-sdk"), tmp_path_factory.mktemp(f"{source}-runs")
                )
            except Exception as error:  # the source's second migration fails the same way, without a rewrite
                done[source] = error
        result = done[source]
        if isinstance(result, Exception):
            raise result
        return result

    return get


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[[Path, str], Any]:
    """``replays(run_dir, target)``: ``tracking replay <run_dir> --to <target>`` in this process; returns the
    replay's dispatcher (finished), whose tracker then reads the target's store back."""
    import tracking_core.cli.replay as replay_command
    from tracking_core.cli import main
    from tracking_core.run.dispatcher import Dispatcher

    made: list[Dispatcher] = []

    class Recorded(Dispatcher):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(replay_command, "Dispatcher", Recorded)

    def replay(run_dir: Path, target: str) -> Any:
        made.clear()
        code = main(["replay", str(run_dir), "--to", target, "--quiet"])
        output = capsys.readouterr()
        assert code == 0, output.out + output.err
        (dispatcher,) = made
        return dispatcher

    return replay


def config_as_kept(target: str, config: dict[str, Any]) -> dict[str, Any]:
    """``config`` as ``target`` keeps it, where a documented rule of the backend changes it (its README)."""
    if target == "swanlab":  # a top-level None is stored as the string "None"
        return {key: "None" if value is None else value for key, value in config.items()}
    return config


def stored_run(target: str, tracker: Any) -> Any:
    """The run the replay made in ``target``, read back through the target's importer (its SDK's reader)."""
    from tracking_core.transfer.importing import importer_for

    read = importer_for(target)
    if target == "mlflow":
        found = list(read(tracker.tracking_uri, options={"run": tracker.active_run_id}))
    elif target == "tensorboard":
        found = list(read(str(tracker.log_dir)))
    elif target == "aim":
        found = [run for run in read(tracker.repo_path) if run.source_id == tracker.run_hash]
    elif target in ("wandb", "swanlab"):  # a resumed run is one folder per process, merged by the importer
        found = list(read(str(Path(tracker.run_dirs[0]).parent)))
    elif target == "comet_ml":
        found = list(read(str(Path(tracker.archive_path).parent)))
    elif target == "clearml":
        found = list(read(str(Path(tracker.offline_folder).parent)))
    elif target == "trackio":
        found = list(read(str(tracker.storage_dir)))
    else:
        found = list(read(str(tracker.dir)))
    assert len(found) == 1, f"{target}: {len(found)} runs where the replay made one: {[run.location for run in found]}"
    return found[0]


@pytest.mark.parametrize(("source", "target"), MIGRATIONS, ids=[f"{source}->{target}" for source, target in MIGRATIONS])
def test_a_run_its_sdk_wrote_migrates_with_every_point_once(
    source: str, target: str, imported: Callable[[str], Imported], replays: Callable[[Path, str], Any]
) -> None:
    run = imported(source)
    first = replays(run.run_dir, target)
    assert first.finish().backends[target].delivered > 0
    again = replays(run.run_dir, target)  # a second replay: the target holds everything already
    assert again.finish().backends[target].delivered == 0, "the second replay sent records again"

    tracker = again.get_tracker(target)
    history = tracker.read_back_history()
    want = {tracker.sanitize_key(key): series for key, series in run.points.items()}
    of_histograms = tuple(tracker.sanitize_key(f"{name}/") for name in run.histograms)
    other = sorted(key for key in history if key not in want and not key.startswith(of_histograms))
    assert not other and set(want) <= set(history), (
        f"{target}: series {other} not imported, {set(want) - set(history)} lost"
    )
    for key, series in want.items():
        steps = [step for step, _ in history[key]]
        assert len(steps) == len(set(steps)), f"{key}: a step stored twice in {target}: {steps}"
        got = dict(history[key])
        assert sorted(got) == sorted(series), f"{key}: steps {sorted(got)} != {sorted(series)}"
        for step, value in series.items():
            assert same_values(float(got[step]), value, target in FLOAT32), f"{key}@{step}: {got[step]} != {value}"

    images = {key: len(items) for key, items in tracker.read_back_images().items()}
    assert images == {tracker.sanitize_key(key): count for key, count in run.images.items()}

    stored = stored_run(target, tracker)
    assert stored.config == config_as_kept(target, run.config)
    if type(tracker).wants_timestamps:  # the target keeps the times it is given: the source's, to the ms
        times = {(point.key, point.step): point.time for point in stored.points}
        for key in run.points:
            for step, when in run.times[key].items():
                got_time = times[(tracker.sanitize_key(key), step)]
                assert round(got_time * 1000) == round(when * 1000), f"{key}@{step}: time {got_time} != {when}"
