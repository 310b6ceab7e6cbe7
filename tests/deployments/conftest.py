"""Deployment tests run in the ``deploy`` environment (``hatch run deploy:run``), which sets
``TRACKING_DEPLOYMENTS``; the backend cells, which collect ``tests/``, leave them out.

``TRACKING_DEPLOYMENTS=required`` (the ``deploy`` environment, so CI) fails a test whose server cannot be
started here (PostgreSQL's programs, full MLflow, psycopg2 or Aim missing); any other value lets it skip
with its reason. At the end of a session that ran them, each scenario's outcome is printed as a table.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

if not os.environ.get("TRACKING_DEPLOYMENTS"):
    collect_ignore_glob = ["test_*.py"]
else:
    sys.path.insert(0, str(Path(__file__).parent))  # deploy_servers.py, deploy_jobs.py beside the tests


def pytest_terminal_summary(terminalreporter: Any) -> None:
    jobs = sys.modules.get("deploy_jobs")  # imported by the tests that ran, if any
    if jobs is not None and jobs.OUTCOMES:
        terminalreporter.write_sep("=", "deployments: each fault, read back with the SDK's own reader")
        terminalreporter.write_line(jobs.outcome_table(jobs.OUTCOMES))
