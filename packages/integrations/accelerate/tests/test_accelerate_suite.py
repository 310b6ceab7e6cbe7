"""Accelerate's own ``tests/test_tracking.py``, run against ``tracking_accelerate.Accelerator``.

"Change one import line" is checked with Accelerate's tests themselves: the file is taken at test
time from Accelerate's sdist on PyPI (nothing of it is kept in this repository), its one line
``from accelerate import Accelerator`` becomes ``from tracking_accelerate import Accelerator``, and
it runs with pytest in a subprocess, with the library's defaults as a user has them (no ``TRACKING_*``
variable in its environment). It runs in the ``accelerate-suite`` cell, which installs every SDK the
file tests: a test skipped for a missing package fails here, and so does any failing test. Deselected:
only the one documented deviation (``DEVIATIONS``, also in the package's README). The counts are printed
(``-rP`` shows them).
"""

from __future__ import annotations

import importlib.util
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
README = Path(__file__).resolve().parents[1] / "README.md"
#: Accelerate's tests that are not run, each with why; the package's README lists them too.
DEVIATIONS = {
    "TensorBoardTrackingTest::test_log": (
        "our TensorBoard backend writes each run's events into <project_dir>/<project>/<run id>/, and the test "
        "takes the first entry of <project_dir>/<project>/ as Accelerate's event file (Accelerate writes there)"
    ),
    "TensorBoardTrackingTest::test_log_with_tensor": "the same folder: it parses that first entry as an event file",
}
#: what the file's ``require_<package>`` decorators look for: every one is installed in this cell
REQUIRED = ("aim", "clearml", "comet_ml", "dvclive", "mlflow", "swanlab", "tensorboard", "trackio", "wandb")
REQUIRED += ("matplotlib", "pandas")
#: the reason of Accelerate's ``require_<package>`` skips
MISSING_PACKAGE = re.compile(r"test requires (?P<package>.+)")
#: the library's settings from the environment (TRACKING_SYSTEM_METRICS, TRACKING_RUN_CONTEXT, TRACKING_DELIVERY,
#: ...): Accelerate's tests run with none of them, as a user's script does
OWN_VARIABLES = "TRACKING_"


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


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """``{Class::test_name: (passed | failed | skipped, skip reason)}`` from pytest's JUnit XML."""
    found: dict[str, tuple[str, str]] = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        name = f"{case.get('classname', '').rpartition('.')[2]}::{case.get('name')}"
        skipped = case.find("skipped")
        if case.find("failure") is not None or case.find("error") is not None:
            found[name] = ("failed", "")
        elif skipped is not None:
            found[name] = ("skipped", skipped.get("message", ""))
        else:
            found[name] = ("passed", "")
    return found


def test_the_readme_lists_every_deviation() -> None:
    readme = README.read_text(encoding="utf-8")
    for test in DEVIATIONS:
        assert f"`{test.replace('::', '.')}`" in readme, f"{README} does not list the deselected {test}"


def test_accelerate_tracking_tests_pass_with_one_import_changed(tmp_path: Path) -> None:
    accelerate = pytest.importorskip("accelerate")
    if accelerate.__version__ != ACCELERATE_VERSION:
        pytest.skip(f"the documented differences are for accelerate {ACCELERATE_VERSION}, not {accelerate.__version__}")
    missing_here = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    assert not missing_here, f"not installed: {missing_here}; run this in the accelerate-suite Hatch environment"
    source = accelerate_test_file().read_text(encoding="utf-8")
    assert source.count(ORIGINAL_IMPORT) == 1, f"Accelerate's test file no longer has {ORIGINAL_IMPORT!r} once"
    work = tmp_path / "suite"
    work.mkdir()
    (work / "test_tracking.py").write_text(source.replace(ORIGINAL_IMPORT, OUR_IMPORT), encoding="utf-8")
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # not this repository's pytest settings
    junit = tmp_path / "junit.xml"
    env = {name: value for name, value in os.environ.items() if not name.startswith(OWN_VARIABLES)}
    env.update(
        CLEARML_CONFIG_FILE=str(tmp_path / "no-clearml.conf"),  # no user's server: ClearML's offline session
        # Accelerate's MLflow tests use a file:// store, which MLflow 3.17 refuses unless this is set
        # (they fail the same way with accelerate's own Accelerator without it).
        MLFLOW_ALLOW_FILE_STORE="true",
        PYTHONDONTWRITEBYTECODE="1",
    )
    command = [sys.executable, "-m", "pytest", "test_tracking.py", "-q", "-p", "no:cacheprovider"]
    command += ["-c", "pytest.ini", f"--junitxml={junit}", "-o", "junit_family=xunit2"]
    command += [f"--deselect=test_tracking.py::{test}" for test in DEVIATIONS]
    result = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    log = f"{result.stdout[-20000:]}\n{result.stderr[-5000:]}"
    assert junit.is_file(), f"pytest did not run Accelerate's tests:\n{log}"
    found = outcomes(junit)
    counts = {outcome: sum(1 for kind, _ in found.values() if kind == outcome) for outcome in ("passed", "failed")}
    skips = {name: reason for name, (kind, reason) in found.items() if kind == "skipped"}
    deselected = re.search(r"(\d+) deselected", result.stdout)
    print(
        f"Accelerate {ACCELERATE_VERSION} tests/test_tracking.py: {counts['passed']} passed, {counts['failed']} failed, "
        f"{len(skips)} skipped, {deselected[1] if deselected else 0} deselected"
    )
    for name, reason in sorted(skips.items()):
        print(f"  skipped {name}: {reason}")
    missing = {name: reason for name, reason in skips.items() if MISSING_PACKAGE.search(reason)}
    assert not missing, f"skipped for a missing package (this cell must install every SDK the file tests): {missing}"
    failed = sorted(name for name, (kind, _) in found.items() if kind == "failed")
    assert not failed, f"Accelerate's tests failing with tracking_accelerate.Accelerator: {failed}\n{log}"
    assert deselected is not None and int(deselected[1]) == len(DEVIATIONS), (
        f"a deviation's test is no longer in Accelerate's file (deselect ids {list(DEVIATIONS)}):\n{log}"
    )
    assert counts["passed"] >= 30, f"only {counts['passed']} of Accelerate's tests passed:\n{log}"
