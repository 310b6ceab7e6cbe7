"""The core contract suite against real Trackio, read back from the project's SQLite store under logging_dir."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tracking_core.testing import ContractRun, TrackerContract
from tracking_trackio import store
from tracking_trackio.older import before_v0_24 as legacy
from tracking_trackio.older import v0_0_3 as first
from tracking_trackio.older.v0_0_3 import reader as csv_store


def run_python(
    code: str, tmp_path: Path, returncode: int = 0, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (trackio not yet imported) with HOME in ``tmp_path/home``."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("TRACKIO_", "HF_"))}
    environment.update(HOME=str(home), MPLCONFIGDIR=str(tmp_path / "mpl"), PYTHONDONTWRITEBYTECODE="1", **env)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd or tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,  # a cold `import trackio` before 0.24 imports gradio: tens of seconds on a loaded machine
    )
    assert result.returncode == returncode, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


def trackio_db(logging_dir: Path, project: str) -> Path:
    """Where the adapter's embedded default puts a project: ``<logging_dir>/trackio/<project>.db``."""
    return store.project_database(logging_dir / "trackio", project)


def reader_env(storage_dir: Path) -> dict[str, str]:
    """The setting that points a new process of this trackio release at ``storage_dir`` (as the notice says)."""
    name, _, value = legacy.store_setting(storage_dir).partition("=")
    return {name: shlex.split(value)[0]}


def run_reader(code: str, tmp_path: Path, storage_dir: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh process of this trackio release pointed at ``storage_dir`` as the README says: the
    setting the start-up notice names, or, for a release whose dashboard reads ``./.trackio`` only (0.0.3 to
    0.0.5, which have no ``trackio show``), from the store's folder with a ``.trackio`` link to the store."""
    if hasattr(__import__("trackio"), "show"):
        return run_python(code, tmp_path, **reader_env(storage_dir))
    link = storage_dir.parent / ".trackio"
    if not link.exists():
        link.symlink_to(storage_dir.name)
    return run_python(code, tmp_path, cwd=storage_dir.parent)


def read_run_rows(logging_dir: Path, project: str) -> list[tuple[str, int, dict]]:
    """``(run name, step, metrics)`` of every row of the project in the order written, decoded with Trackio's own
    value decoder (NaN/inf markers). Where the release stores no step (before 0.0.16) each run's rows are
    numbered 0, 1, 2, ... as Trackio's dashboard numbers them; trackio 0.0.3's CSV files are read run by run."""
    storage = logging_dir / "trackio"
    if first.csv_storage() is not None:
        folders = sorted((storage / project).iterdir()) if (storage / project).is_dir() else []
        assert folders, f"no Trackio run under {storage / project}: {sorted(p.name for p in logging_dir.rglob('*'))}"
        return [
            (run.name, step, values)
            for run in folders
            for step, values in csv_store.run_rows(storage, project, run.name)
        ]
    database = trackio_db(logging_dir, project)
    assert database.is_file(), f"no Trackio store at {database}: {sorted(p.name for p in logging_dir.rglob('*'))}"
    with sqlite3.connect(database) as connection:
        have = store.columns(connection, "metrics")
        step = "step" if "step" in have else "NULL"
        where, values = (" WHERE project_name = ?", (project,)) if "project_name" in have else ("", ())
        rows = connection.execute(
            f"SELECT run_name, {step}, metrics FROM metrics{where} ORDER BY id", values
        ).fetchall()
    connection.close()
    numbers: Counter[str] = Counter()
    read = []
    for name, stored, metrics in rows:
        read.append((name, numbers[name] if stored is None else stored, store.decode(json.loads(metrics))))
        numbers[name] += 1
    return read


def read_rows(logging_dir: Path, project: str) -> list[tuple[int, dict]]:
    """``(step, metrics)`` of every row of the project (:func:`read_run_rows`)."""
    return [(step, metrics) for _name, step, metrics in read_run_rows(logging_dir, project)]


def as_stored(steps: list[int]) -> list[int]:
    """The steps rows logged at ``steps`` read back at: those, or 0, 1, 2, ... where the release numbers the rows
    itself (0.0.3 to 0.0.16)."""
    return list(range(len(steps))) if first.numbers_rows() else steps


def keeps_no_config(notes: list[str]) -> bool:
    """True (after checking the one report note that says so) where this trackio release keeps no run config."""
    if legacy.stores_config():
        return False
    assert sum("keeps no run config" in note for note in notes) == 1, notes
    return True


def read_config(logging_dir: Path, project: str) -> dict[str, Any]:
    """The config of the project's one run: its ``configs`` row (keyed by project in 0.0.4 to 0.0.16), or
    trackio 0.0.3's ``config.json``."""
    if first.csv_storage() is not None:
        [folder] = (logging_dir / "trackio" / project).iterdir()
        return csv_store.config(folder)
    database = trackio_db(logging_dir, project)
    with sqlite3.connect(database) as connection:
        where = " WHERE project_name = ?" if "project_name" in store.columns(connection, "configs") else ""
        rows = connection.execute(f"SELECT config FROM configs{where}", (project,) if where else ()).fetchall()
    connection.close()
    assert len(rows) == 1, rows
    return json.loads(rows[0][0])


def _series(rows: list[tuple[int, dict]], kind: type | tuple) -> dict[str, dict[int, Any]]:
    out: dict[str, dict[int, Any]] = {}
    for step, metrics in rows:
        for key, value in metrics.items():
            if isinstance(value, kind) and not isinstance(value, bool):
                out.setdefault(key, {})[step] = value
    return out


class TestTrackioContract(TrackerContract):
    backend_name = "trackio"

    @pytest.fixture(autouse=True)
    def _no_user_trackio_dir(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("TRACKIO_DIR", raising=False)  # the user's own setting would (rightly) win

    def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
        return _series(read_rows(run.logging_dir, run.project), (int, float))

    def read_texts(self, run: ContractRun) -> dict[str, dict[int, str]]:
        return _series(read_rows(run.logging_dir, run.project), str)

    def read_config(self, run: ContractRun) -> dict[str, Any]:
        assert run.report is not None
        if keeps_no_config(run.report.backends["trackio"].notes):
            raise NotImplementedError("this trackio release keeps no run config")  # the suite skips the test
        return read_config(run.logging_dir, run.project)

    def read_images(self, run: ContractRun) -> dict[str, list[int]]:
        if not hasattr(__import__("trackio"), "Image"):
            raise NotImplementedError("this trackio release has no images")
        images: dict[str, list[int]] = {}
        for step, metrics in read_rows(run.logging_dir, run.project):
            for key, value in metrics.items():
                if isinstance(value, dict) and value.get("_type") == "trackio.image":
                    assert store.media_file(run.logging_dir / "trackio", value["file_path"]).is_file(), value
                    images.setdefault(key, []).append(step)
        return images

    def test_text_values(self, tmp_path: Path) -> None:
        if not first.numbers_rows():
            super().test_text_values(tmp_path)
            return
        run = self.start_run(tmp_path)  # logged at steps 2 and 3: the release numbers the rows 0 and 1
        run.dispatcher.log({"note": "first words", "loss": 1.0}, step=2)
        run.dispatcher.log({"note": "later words", "loss": 0.5}, step=3)
        self.finish(run)
        assert self.read_texts(run)["note"] == {0: "first words", 1: "later words"}
        assert run.report is not None and run.report.backends["trackio"].notes.count(first.STEPS_NOTE) == 1

    def test_step_none_counts_on_from_previous(self, tmp_path: Path) -> None:
        if not first.numbers_rows():
            super().test_step_none_counts_on_from_previous(tmp_path)
            return
        run = self.start_run(tmp_path)  # every row in the order written, each once, whatever step it was given
        for value, step in ((1.0, None), (2.0, None), (3.0, None), (10.0, 10), (11.0, None)):
            run.dispatcher.log({"auto": value}, step=step)
        self.assert_series(
            self.read_metrics(self.finish(run))["auto"], {0: 1.0, 1: 2.0, 2: 3.0, 3: 10.0, 4: 11.0}, "auto"
        )
        assert run.report is not None and run.report.backends["trackio"].notes.count(first.STEPS_NOTE) == 1

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        if not hasattr(__import__("trackio"), "Table"):
            raise NotImplementedError("this trackio release has no tables")
        tables = {}
        for _step, metrics in read_rows(run.logging_dir, run.project):
            for key, value in metrics.items():
                if isinstance(value, dict) and value.get("_type") == "trackio.table":
                    tables[key] = [list(row.values()) for row in value["_value"]]
        return tables
