"""Repository tools: the CI planner picks the right cells, the distribution check finds what it should, pre-commit matches CI."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):  # the repository's tools run on the developer's Python and read TOML with tomllib
    pytest.skip("tools/ needs Python 3.11+ (tomllib)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("changed_backends", ROOT / "tools" / "changed_backends.py")
changed_backends = importlib.util.module_from_spec(spec)
spec.loader.exec_module(changed_backends)

BACKENDS = ["aim", "mlflow", "wandb"]


def test_backend_change_selects_that_backend():
    assert changed_backends.select(["packages/mlflow/src/tracking_mlflow/tracker.py"], BACKENDS) == ["mlflow"]


def test_shared_changes_select_everything():
    for path in (
        "packages/core/src/tracking_core/worker.py",
        "tests/test_x.py",
        "pyproject.toml",
        ".github/workflows/ci.yml",
    ):
        assert changed_backends.select([path], BACKENDS) == BACKENDS


def test_docs_only_select_nothing():
    assert changed_backends.select(["README.md", "packages/aim/README.md"], BACKENDS) == []


def test_every_backend_folder_is_a_matrix_cell():
    import tomllib

    matrix = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["envs"]["test"]["matrix"][0][
        "backend"
    ]
    assert set(changed_backends.all_backends(ROOT)) <= set(matrix)


def test_oldest_sdk_pins_are_the_packages_lower_bounds():
    """Every backend's floor is tested: its oldest cell pins each SDK it declares at the declared lower bound
    (pins of packages it does not declare, such as an SDK's own dependency, are left to the cell)."""
    import re
    import tomllib

    hatch = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["envs"]
    pins = hatch["oldest"]["overrides"]["matrix"]["backend"]["extra-dependencies"]
    assert pins, "no oldest-SDK cell"
    backends = hatch["test"]["matrix"][0]["backend"]
    assert sorted(backend for matrix in hatch["oldest"]["matrix"] for backend in matrix["backend"]) == sorted(backends)
    floored = set()
    for pin in pins:
        (backend,) = pin["if"]
        sdk, version = pin["value"].split("==")
        package = tomllib.loads((ROOT / "packages" / backend / "pyproject.toml").read_text())["project"]
        declared = [
            *package["dependencies"],
            *[d for extra in package.get("optional-dependencies", {}).values() for d in extra],
        ]
        bounds = [re.sub(r"\s", "", dep) for dep in declared if re.match(rf"{re.escape(sdk)}(\W|$)", dep)]
        bounds = [bound for bound in bounds if ">=" in bound]
        if not bounds:
            continue  # not the package's own dependency: a pin the floor needs around it
        floor = re.search(r">=([\w.]+)", bounds[0]).group(1)
        assert version == floor or version.startswith(floor + "."), (pin, bounds)
        floored.add(backend)
    assert floored == set(backends), f"no floor pin for {sorted(set(backends) - floored)}"


def _load_tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_dists = _load_tool("check_dists")


def test_relative_links_are_found_and_absolute_ones_pass():
    readme = (
        "See [the guide](../../README.md), ![plot](docs/plot.png), [ok](https://example.org/x), [top](#use)\n"
        "[ref]: ../CHANGELOG.md\n"
        '<img src="img/logo.png"> <a href="mailto:a@b.c">mail</a>\n'
        "```markdown\n[in a code block](../ignored.md)\n```\n"
    )
    assert check_dists.relative_links(readme) == ["../../README.md", "docs/plot.png", "../CHANGELOG.md", "img/logo.png"]


def _metadata(**overrides: str) -> str:
    fields = {
        "Metadata-Version": "2.4",
        "Name": "tracking-x",
        "Author": "The tracking authors",
        "License-Expression": "Apache-2.0",
        "License-File": "LICENSE",
        "Requires-Python": ">=3.10",
        "Description-Content-Type": "text/markdown",
        "Requires-Dist": "tracking-core<0.2,>=0.1",
    }
    fields.update(overrides)
    urls = [f"{name}, {check_dists.REPOSITORY}/{name.lower()}" for name in check_dists.REQUIRED_URLS]
    classifiers = ["Programming Language :: Python :: 3.10", "Typing :: Typed"]
    lines = [f"{k}: {v}" for k, v in fields.items() if v]
    lines += [f"Project-URL: {url}" for url in urls] + [f"Classifier: {c}" for c in classifiers]
    body = f"# tracking-x\n\nSee <{check_dists.REPOSITORY}>.\n" + "words " * 200
    return "\n".join(lines) + "\n\n" + body


def test_complete_metadata_passes():
    assert check_dists.metadata_problems(_metadata(), "x") == []


def test_metadata_problems_name_what_is_missing():
    problems = check_dists.metadata_problems(_metadata(Author="", **{"License-Expression": "MIT"}), "x")
    assert any("License-Expression" in p for p in problems)
    assert "no author" in problems
    assert any("3.9" in p for p in check_dists.metadata_problems(_metadata(**{"Requires-Python": ">=3.9"}), "x"))


def test_a_short_or_relative_readme_is_refused():
    metadata = _metadata().split("\n\n", 1)[0] + "\n\nSee [tracking](../../README.md).\n"
    problems = check_dists.metadata_problems(metadata, "x")
    assert any("too short" in p for p in problems)
    assert any("'../../README.md'" in p for p in problems)


def test_every_package_ships_the_repository_license():
    license_text = (ROOT / "LICENSE").read_bytes()
    assert b"Apache License" in license_text and b"Version 2.0, January 2004" in license_text
    for folder in check_dists.package_folders():
        assert (folder / "LICENSE").read_bytes() == license_text, folder.name


def test_the_package_checks_find_the_framework_integrations():
    found = {folder.relative_to(ROOT).as_posix() for folder in check_dists.package_folders()}
    assert {"packages/core", "packages/mlflow", "packages/integrations/accelerate"} <= found
    assert {"packages/integrations/transformers", "packages/integrations/lightning"} <= found
    assert "packages/integrations" not in found  # a folder of packages, not a package


def test_pre_commit_runs_the_ruff_that_ci_runs():
    import re
    import tomllib

    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["envs"]["lint"]["dependencies"]
    (ci_ruff,) = [dep for dep in lint if dep.startswith("ruff")]
    hooks = (ROOT / ".pre-commit-config.yaml").read_text()
    assert set(re.findall(r"ruff==[\w.]+", hooks)) == {ci_ruff}
    assert "entry: bash tools/run.sh actionlint" in hooks


def test_pre_commit_runs_the_mypy_that_ci_runs():
    import re
    import tomllib

    types = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["envs"]["types"]["dependencies"]
    (ci_mypy,) = [dep for dep in types if dep.startswith("mypy")]
    hooks = (ROOT / ".pre-commit-config.yaml").read_text()
    assert set(re.findall(r"mypy==[\w.]+", hooks)) == {ci_mypy}


def test_the_type_check_covers_every_package():
    import tomllib

    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    for folder in check_dists.package_folders():  # backends and framework integrations alike
        src = folder / "src"
        (package,) = [p for p in src.iterdir() if (p / "py.typed").exists()]
        assert package.relative_to(ROOT).as_posix() in mypy["files"], package
        assert src.relative_to(ROOT).as_posix() in mypy["mypy_path"], src


def test_the_loop_benchmark_runs_and_prints_its_table():
    if os.environ.get("TRACKING_BACKEND"):
        pytest.skip("runs once, in the core cell")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "bench.py"),
            "--loop",
            "--backends",
            "jsonl",
            "--steps",
            "30",
            "--rounds",
            "1",
            "--settle",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    rows = {line.rsplit("  ", 1)[0]: line for line in result.stdout.splitlines()}
    cells = [re.split(r"\s{2,}", line) for line in result.stdout.splitlines()]
    thread = next("  ".join(row) for row in cells if row[:2] == ["tracking (threads)", "jsonl"])
    process = next("  ".join(row) for row in cells if row[:2] == ["tracking (process)", "jsonl"])
    assert any(line.startswith("no tracking") for line in rows.values()), result.stdout
    for line in (thread, process):
        assert "x /" in line and "(+" in line, line
    header = next(row for row in cells if row and row[0] == "path")
    column = header.index("delivery CPU s")
    process_row = next(row for row in cells if row[:2] == ["tracking (process)", "jsonl"])
    assert re.fullmatch(r"[\d.]+ / [\d.]+ / [\d.]+", process_row[column]), process_row  # read from the delivery process


def test_the_journal_feed_benchmark_compares_the_socket_with_the_tailed_journal():
    if os.environ.get("TRACKING_BACKEND"):
        pytest.skip("runs once, in the core cell")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "bench_journal_feed.py"),
            "--rates",
            "4000",
            "--seconds",
            "0.2",
            "--rounds",
            "1",
            "--settle",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    cells = {tuple(row[:2]): row for row in (re.split(r"\s{2,}", line) for line in result.stdout.splitlines())}
    for feed in ("socket (today)", "tail journal"):
        row = cells[("4000", feed)]
        # every record reached the receiving process (no note), which timed it
        assert len(row) == 10 and float(row[6]) > 0, row
    assert ("4000", "no tracking (again)") in cells, result.stdout


def test_the_caller_benchmark_shows_the_floor_with_and_without_the_value_checks():
    if os.environ.get("TRACKING_BACKEND"):
        pytest.skip("runs once, in the core cell")
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench.py"), "--only-core", "--steps", "30"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    cells = [re.split(r"\s{2,}", line) for line in result.stdout.splitlines()]
    paths = {(row[0], row[1]) for row in cells if len(row) > 2}
    assert {("floor", "dict copy + queue put"), ("floor", "+ value checks"), ("jsonl", "dispatcher async")} <= paths
    checks = next(row for row in cells if row[:2] == ["floor", "+ value checks"])
    assert "x /" in checks[5], checks  # compared with the floor


def test_the_closing_total_names_each_failed_test_and_the_slowest(tmp_path):
    """CI keeps the end of the log: the total at the end names what failed, with its message's first line,
    and the slowest tests across the cells say where CI's time went."""
    report = tmp_path / "core.xml"
    report.write_text(
        '<testsuites><testsuite errors="1" failures="1" skipped="1" tests="4">'
        '<testcase classname="tests.test_x" name="test_ok" time="0.5"/>'
        '<testcase classname="tests.test_x" name="test_skip"><skipped message="no reader"/></testcase>'
        '<testcase classname="tests.test_x" name="test_bad" time="12.25">'
        '<failure message="AssertionError: 1 == 0&#10;more"/></testcase>'
        '<testcase classname="tests.test_y" name="test_setup"><error message="fixture broke"/></testcase>'
        "</testsuite></testsuites>"
    )
    (tmp_path / "mlflow-unit.xml").write_text(
        '<testsuites><testsuite tests="1"><testcase classname="t.test_m" name="test_slow" time="3"/>'
        "</testsuite></testsuites>"
    )
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "junit_total.py"), str(report), str(tmp_path / "mlflow-unit.xml")],
        capture_output=True,
        text=True,
    )
    assert result.stdout.splitlines() == [
        "slowest 5 tests (seconds, cell: test):",
        "     12.2  core: tests.test_x::test_bad",
        "      3.0  mlflow-unit: t.test_m::test_slow",
        "      0.5  core: tests.test_x::test_ok",
        "      0.0  core: tests.test_y::test_setup",
        "      0.0  core: tests.test_x::test_skip",
        "tests: 2 passed, 2 failed, 1 skipped",
        "  core: tests.test_x::test_bad: AssertionError: 1 == 0",
        "  core: tests.test_y::test_setup: fixture broke",
    ]


def test_environments_built_from_older_pyprojects_get_this_checkouts_packages_again(tmp_path):
    spec = importlib.util.spec_from_file_location("refresh_installs", ROOT / "tools" / "refresh_installs.py")
    refresh_installs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(refresh_installs)
    env = tmp_path / "test.mlflow"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").symlink_to(sys.executable)
    for name, source in (("tracking_core", ROOT / "packages" / "core"), ("numpy", tmp_path / "elsewhere")):
        info = env / "lib" / "python3.11" / "site-packages" / f"{name}-0.1.dist-info"
        info.mkdir(parents=True)
        info.joinpath("direct_url.json").write_text(f'{{"url": "{source.as_uri()}", "dir_info": {{"editable": true}}}}')
    calls = tmp_path / "calls"
    uv = tmp_path / "uv"  # stands in for Hatch's uv: what it was asked to reinstall is the point here
    uv.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    uv.chmod(0o755)

    assert refresh_installs.refresh(tmp_path, str(uv)) == 0
    assert calls.read_text().split() == [
        "pip", "install", "--quiet", "--no-deps", "--python", str(env / "bin" / "python"),
        "-e", str(ROOT / "packages" / "core"),
    ]  # fmt: skip
    assert refresh_installs.refresh(tmp_path, str(uv)) == 0
    assert len(calls.read_text().splitlines()) == 1  # the stamp matches now: nothing to do until a pyproject changes

    first_time = tmp_path / "no environments yet"
    assert refresh_installs.refresh(first_time, str(uv)) == 0  # what Hatch builds next is built from these files
    assert (first_time / refresh_installs.STAMP).is_file() and len(calls.read_text().splitlines()) == 1
