"""A store written by a newer MLflow than the one installed: one clear start failure, not a raw traceback."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import tracking_core

#: a made-up alembic revision: a real one would be known to whichever MLflow release first shipped it (a test
#: that took the newest release's head broke once that release became the one installed)
NEWER_REVISION = "feedfacecafe"


def test_a_store_from_a_newer_mlflow_fails_at_start_naming_both_revisions_and_the_fix(tmp_path):
    run = tracking_core.init("first", log_with=["mlflow"], logging_dir=tmp_path)
    run.log({"loss": 1.0}, step=0)
    assert run.finish(timeout=120).ok
    with sqlite3.connect(tmp_path / "mlflow.db") as db:
        (installed,) = db.execute("SELECT version_num FROM alembic_version").fetchone()
        # a revision no MLflow release has: the store's schema is from a release after the installed one
        db.execute(f"UPDATE alembic_version SET version_num = '{NEWER_REVISION}'")

    # A new process, as after a downgrade (MLflow keeps each store it opened for the life of the process)
    second = subprocess.run(
        [sys.executable, "-c", SECOND_RUN, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert second.returncode == 0, second.stderr
    state, text = second.stdout.split("\n", 1)
    assert state == "start_failed", text
    assert NEWER_REVISION in text and installed in text, text
    assert "newer MLflow" in text and "logging_dir" in text, text
    assert "Traceback" not in text and "sqlalchemy" not in text.lower(), text
    # one warning, the start's, with no retry and none of SQLAlchemy's or alembic's frames
    assert second.stderr.count("failed in start") == 1 and "not retried" in second.stderr, second.stderr
    assert "sqlalchemy" not in second.stderr.lower() and "alembic" not in second.stderr.lower(), second.stderr


SECOND_RUN = """
import sys, tracking_core
run = tracking_core.init("second", log_with=["mlflow"], logging_dir=sys.argv[1])
run.log({"loss": 1.0}, step=0)
report = run.finish(timeout=120)
print(report.backends["mlflow"].state)
print(report)
"""
