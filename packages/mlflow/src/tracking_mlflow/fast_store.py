"""Metrics written straight into a local MLflow sqlite store, one transaction per chunk.

MLflow's ``SqlAlchemyStore.log_batch`` builds an ORM object per point, reads back the run and the
latest metrics, and costs ~90 µs a point on sqlite: a loop logging 16,000 points/s outruns it. This
module writes the same rows into the same two tables with MLflow's own rules, so that MLflow's
client, REST API and UI read exactly what MLflow would have stored:

* ``metrics``: every point, its value as MLflow stores it (NaN as 0 with ``is_nan``, +/-infinity as
  +/-1.7976931348623157e308), a point identical to a stored one in key, timestamp, step, value and
  ``is_nan`` (the table's primary key) stored once;
* ``latest_metrics``: per key, the point that is strictly more recent by ``(step, timestamp, value)``
  than the one stored, as MLflow's ``_update_latest_metrics_if_necessary`` decides.

It is used only for a sqlite file whose two tables have exactly the columns and primary keys it knows
(checked when the writer opens), for a run that is active (checked in each transaction), for keys,
steps and timestamps MLflow accepts (its own name check, once per key), and for points without
MLflow 3's ``model_id`` / dataset options. A tracking server, another database, a
schema a later MLflow changes and those points go through MLflow's client as before.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

#: points per transaction: a dispatcher batch of 1,000 records of 8 scalars in one commit (its fsyncs
#: paid once per 8,000 points, not once per 1,000), while the write lock that other processes on the
#: same file (the ranks of a per-rank job, ``mlflow ui``) wait for is held for tens of milliseconds
CHUNK_POINTS = 10_000

_MAX_FLOAT = 1.7976931348623157e308  # MLflow's stand-in for infinity (SQL has none)
_INT64 = 2**63

#: the tables as MLflow 2.16 to 3.x create them: column -> part of the primary key
_METRICS = {"key": True, "value": True, "timestamp": True, "run_uuid": True, "step": True, "is_nan": True}
_LATEST = {"key": True, "value": False, "timestamp": False, "run_uuid": True, "step": False, "is_nan": False}

_INSERT_POINTS = "INSERT OR IGNORE INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES "
_ROW = "(?, ?, ?, ?, ?, ?)"
#: rows per INSERT statement, at most: sqlite3 lets go of the interpreter lock at every statement step and
#: takes it back after, so ``executemany`` of one row per step makes the worker wait for the lock once a
#: row while the training loop holds it (a 10,000-point chunk then takes seconds and the loop waits for
#: queue room); one statement of many rows takes the lock back a few times per chunk
ROWS_PER_STATEMENT = 2_000
#: the latest point of every key of a chunk in one statement (a key appears once in it), for the same
#: reason as ``ROWS_PER_STATEMENT``: one lock hand-over per chunk, not one per key
_UPDATE_LATEST_ROWS = "INSERT INTO latest_metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES "
_ON_CONFLICT_LATEST = (
    " ON CONFLICT (key, run_uuid) DO UPDATE SET "
    "value = excluded.value, timestamp = excluded.timestamp, step = excluded.step, is_nan = excluded.is_nan "
    "WHERE (excluded.step, excluded.timestamp, excluded.value) "
    "> (latest_metrics.step, latest_metrics.timestamp, latest_metrics.value)"
)

#: ``(key, value, timestamp in ms, step)``: one point as ``MetricWriter.write`` takes it
Point = tuple[str, float, int, int]


def stored_value(value: float) -> tuple[float, bool]:
    """``(value as MLflow's sqlite store keeps it, is_nan)``."""
    if math.isnan(value):
        return 0.0, True
    if math.isinf(value):
        return math.copysign(_MAX_FLOAT, value), False
    return value, False


def _mlflow_name_check() -> Callable[[str], bool] | None:
    """MLflow's own check of a metric name (its characters, and its length limit), or None where this
    MLflow has none under the names it has had since 2.16."""
    try:
        from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, _validate_metric_name
    except ImportError:
        return None

    def accepts(key: str) -> bool:
        try:
            _validate_metric_name(key)
        except Exception:
            return False
        return len(key) <= int(MAX_ENTITY_KEY_LENGTH)

    return accepts


def _variable_limit(connection: sqlite3.Connection) -> int:
    """How many ``?`` one statement may hold in this build of SQLite (999 before 3.32 by default)."""
    getlimit = getattr(connection, "getlimit", None)  # Python 3.11+
    if getlimit is not None:
        return int(getlimit(getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", 9)))  # 9: SQLite's own number for it
    return 32_766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999


def _columns(connection: sqlite3.Connection, table: str) -> dict[str, bool]:
    return {row[1]: row[5] > 0 for row in connection.execute(f"PRAGMA table_info({table})")}


class MetricWriter:
    """Writes one run's points into a local MLflow sqlite store (see the module's docstring)."""

    def __init__(self, connection: sqlite3.Connection, run_id: str, name_ok: Callable[[str], bool]) -> None:
        self._connection = connection
        self.run_id = run_id
        self._name_ok = name_ok
        self._names: set[str] = set()  # keys MLflow's name check accepted
        self._rows_per_statement = max(1, min(ROWS_PER_STATEMENT, _variable_limit(connection) // len(_METRICS)))
        self._statements: dict[tuple[str, int], str] = {}  # (statement, rows) -> its text for that many rows

    @classmethod
    def open(cls, store: Path, run_id: str) -> MetricWriter | None:
        """A writer on ``store`` for ``run_id``, or None where the store's schema is not the one this knows."""
        name_ok = _mlflow_name_check()
        if sqlite3.sqlite_version_info < (3, 24, 0) or name_ok is None:  # no UPSERT, or no name check
            return None
        try:
            # autocommit: each write() opens and commits its own transaction; the worker thread that
            # delivers is not always the one that started the backend
            connection = sqlite3.connect(store, timeout=30.0, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return None
        try:
            known = _columns(connection, "metrics") == _METRICS and _columns(connection, "latest_metrics") == _LATEST
        except sqlite3.Error:
            known = False
        if not known:
            connection.close()
            return None
        return cls(connection, run_id, name_ok)

    def write(self, points: Sequence[Point]) -> bool:
        """Store ``points`` in one transaction; False (nothing written) when MLflow must decide: the run
        is not active, a key fails MLflow's name check, a step is beyond 64 bits or a timestamp negative
        (MLflow refuses them with its own error)."""
        run_id, names = self.run_id, self._names
        rows = []
        latest: dict[str, tuple[tuple[int, int, float], bool]] = {}
        for key, value, timestamp, step in points:
            if not (-_INT64 <= step < _INT64 and 0 <= timestamp < _INT64):
                return False
            if key not in names:
                if not self._name_ok(key):
                    return False
                names.add(key)
            if value - value == 0.0:  # finite: stored as it is (the common case, without a call)
                stored, is_nan = value, False
            else:
                stored, is_nan = stored_value(value)
            rows.append((key, stored, timestamp, run_id, step, is_nan))
            rank = (step, timestamp, stored)
            best = latest.get(key)
            if best is None or rank > best[0]:
                latest[key] = (rank, is_nan)
        connection = self._connection
        connection.execute("BEGIN IMMEDIATE")  # the write lock now: no other writer between the check and the rows
        try:
            stage = connection.execute("SELECT lifecycle_stage FROM runs WHERE run_uuid = ?", (run_id,)).fetchone()
            if stage is None or stage[0] != "active":
                connection.execute("ROLLBACK")
                return False
            self._insert(rows, _INSERT_POINTS, "")
            latest_rows = [
                (key, value, timestamp, run_id, step, is_nan)
                for key, ((step, timestamp, value), is_nan) in latest.items()
            ]
            self._insert(latest_rows, _UPDATE_LATEST_ROWS, _ON_CONFLICT_LATEST)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        return True

    def _insert(self, rows: list[tuple[str, float, int, str, int, bool]], head: str, tail: str) -> None:
        """``head`` + many rows + ``tail``, as few statements as SQLite's variable limit allows."""
        per, execute = self._rows_per_statement, self._connection.execute
        for start in range(0, len(rows), per):
            chunk = rows[start : start + per]
            statement = self._statements.get((head, len(chunk)))
            if statement is None:
                statement = self._statements[head, len(chunk)] = head + ", ".join([_ROW] * len(chunk)) + tail
            execute(statement, [field for row in chunk for field in row])

    def close(self) -> None:
        self._connection.close()
