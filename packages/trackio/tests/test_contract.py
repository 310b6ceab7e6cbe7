"""The core contract suite against real Trackio, read back from the project's SQLite store under logging_dir."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tracking_core.testing import ContractRun, TrackerContract
from tracking_trackio import legacy, store


def run_python(code: str, tmp_path: Path, returncode: int = 0, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (trackio not yet imported) with HOME in ``tmp_path/home``."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("TRACKIO_", "HF_"))}
    environment.update(HOME=str(home), MPLCONFIGDIR=str(tmp_path / "mpl"), PYTHONDONTWRITEBYTECODE="1", **env)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
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


def read_rows(logging_dir: Path, project: str) -> list[tuple[int, dict]]:
    """``(step, metrics)`` of every metrics row, decoded with Trackio's own value decoder (NaN/inf markers)."""
    database = trackio_db(logging_dir, project)
    assert database.is_file(), f"no Trackio store at {database}: {sorted(p.name for p in logging_dir.rglob('*'))}"
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT step, metrics FROM metrics ORDER BY id").fetchall()
    connection.close()
    return [(step, store.decode(json.loads(metrics))) for step, metrics in rows]


def keeps_no_config(notes: list[str]) -> bool:
    """True (after checking the one report note that says so) where this trackio release keeps no run config."""
    if legacy.stores_config():
        return False
    assert sum("keeps no run config" in note for note in notes) == 1, notes
    return True


def read_config(logging_dir: Path, project: str) -> dict[str, Any]:
    database = trackio_db(logging_dir, project)
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT config FROM configs").fetchall()
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

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        if not hasattr(__import__("trackio"), "Table"):
            raise NotImplementedError("this trackio release has no tables")
        tables = {}
        for _step, metrics in read_rows(run.logging_dir, run.project):
            for key, value in metrics.items():
                if isinstance(value, dict) and value.get("_type") == "trackio.table":
                    tables[key] = [list(row.values()) for row in value["_value"]]
        return tables
