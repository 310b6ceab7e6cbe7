"""Accelerate's own ``tests/test_tracking.py``, run against ``tracking_accelerate.Accelerator``.

"Change one import line" is checked with Accelerate's tests themselves: the file is taken at test
time from Accelerate's sdist on PyPI (nothing of it is kept in this repository), its one line
``from accelerate import Accelerator`` becomes ``from tracking_accelerate import Accelerator``, and
it runs with pytest in a subprocess. Every test must pass except exactly the ones the table
"Accelerate's own tests" in docs/migrating-from-accelerate.md lists, each with its reason: a new
failure fails here, and a fixed test must leave that table.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

ACCELERATE_VERSION = "1.15.0"
ORIGINAL_IMPORT = "from accelerate import Accelerator\n"
OUR_IMPORT = "from tracking_accelerate import Accelerator\n"
CACHE = Path(os.environ.get("TRACKING_ACCELERATE_TESTS_CACHE", "~/.cache/tracking/accelerate-tests")).expanduser()
DOC = Path(__file__).resolve().parents[4] / "docs" / "migrating-from-accelerate.md"
SECTION = "### Accelerate's own tests"
#: a table row naming a test: | `Class.test_name` | reason |
LISTED_ROW = re.compile(r"^\|\s*`(?P<test>\w+\.\w+)`\s*\|(?P<reason>.*)\|\s*$")


def _pypi_reachable() -> bool:
    try:
        with socket.create_connection(("pypi.org", 443), timeout=5):
            return True
    except OSError:
        return False


def accelerate_test_file() -> Path:
    """Accelerate's ``tests/test_tracking.py`` from its sdist, downloaded once into ``CACHE``."""
    target = CACHE / ACCELERATE_VERSION / "test_tracking.py"
    if target.is_file():
        return target
    downloads = CACHE / "sdists"
    sdist = downloads / f"accelerate-{ACCELERATE_VERSION}.tar.gz"
    if not sdist.is_file():
        command = [sys.executable, "-m", "pip", "download", f"accelerate=={ACCELERATE_VERSION}"]
        command += ["--no-binary", ":all:", "--no-deps", "-q", "-d", str(downloads)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if not sdist.is_file():
            if not _pypi_reachable():
                pytest.skip(f"PyPI is unreachable: cannot download the accelerate {ACCELERATE_VERSION} sdist")
            pytest.fail(f"pip download of accelerate {ACCELERATE_VERSION} failed:\n{result.stdout}{result.stderr}")
    member = f"accelerate-{ACCELERATE_VERSION}/tests/test_tracking.py"
    with tarfile.open(sdist) as archive:
        extracted = archive.extractfile(member)
        assert extracted is not None, f"{sdist} has no {member}"
        text = extracted.read()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(text)
    partial.replace(target)
    return target


def listed_failures() -> dict[str, str]:
    """``{Class.test_name: reason}`` from the documented table of Accelerate tests that fail here."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index(SECTION) + 1
    listed: dict[str, str] = {}
    for line in lines[start:]:
        if line.startswith("#"):
            break
        match = LISTED_ROW.match(line)
        if match:
            reason = match["reason"].strip()
            assert reason, f"{match['test']} is listed in {DOC.name} without a reason"
            listed[match["test"]] = reason
    assert listed, f"no tests listed under {SECTION!r} in {DOC}"
    return listed


def outcomes(junit: Path) -> dict[str, str]:
    """``{Class.test_name: passed | failed | skipped}`` from pytest's JUnit XML."""
    found: dict[str, str] = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        name = f"{case.get('classname', '').rpartition('.')[2]}.{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            found[name] = "failed"
        elif case.find("skipped") is not None:
            found[name] = "skipped"
        else:
            found[name] = "passed"
    return found


def test_accelerate_tracking_tests_pass_with_one_import_changed(tmp_path: Path) -> None:
    accelerate = pytest.importorskip("accelerate")
    if accelerate.__version__ != ACCELERATE_VERSION:
        pytest.skip(f"the documented differences are for accelerate {ACCELERATE_VERSION}, not {accelerate.__version__}")
    source = accelerate_test_file().read_text(encoding="utf-8")
    assert source.count(ORIGINAL_IMPORT) == 1, f"Accelerate's test file no longer has {ORIGINAL_IMPORT!r} once"
    work = tmp_path / "suite"
    work.mkdir()
    (work / "test_tracking.py").write_text(source.replace(ORIGINAL_IMPORT, OUR_IMPORT), encoding="utf-8")
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # not this repository's pytest settings
    junit = tmp_path / "junit.xml"
    env = {
        **os.environ,
        "CLEARML_CONFIG_FILE": str(tmp_path / "no-clearml.conf"),  # no user's server: ClearML's offline session
        # Accelerate's MLflow tests use a file:// store, which MLflow 3.17 refuses unless this is set
        # (they fail the same way with accelerate's own Accelerator without it).
        "MLFLOW_ALLOW_FILE_STORE": "true",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    command = [sys.executable, "-m", "pytest", "test_tracking.py", "-q", "-p", "no:cacheprovider"]
    command += ["-c", "pytest.ini", f"--junitxml={junit}", "-o", "junit_family=xunit2"]
    result = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    log = f"{result.stdout[-20000:]}\n{result.stderr[-5000:]}"
    assert junit.is_file(), f"pytest did not run Accelerate's tests:\n{log}"
    found = outcomes(junit)
    listed = listed_failures()
    failed = {name for name, outcome in found.items() if outcome == "failed"}
    passed = {name for name, outcome in found.items() if outcome == "passed"}
    new_failures = sorted(failed - set(listed))
    now_passing = sorted(set(listed) & passed)
    not_run = sorted(set(listed) - failed - passed)
    assert not new_failures, f"Accelerate tests failing here and not listed in {DOC.name}: {new_failures}\n{log}"
    assert not now_passing, f"listed in {DOC.name} as failing but passing now (remove them there): {now_passing}"
    assert not not_run, f"listed in {DOC.name} but not run in this environment: {not_run}"
    assert len(passed) >= 20, f"only {len(passed)} of Accelerate's tests passed:\n{log}"
