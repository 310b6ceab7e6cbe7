"""The CI planner picks the right matrix cells."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
    import re
    import tomllib

    oldest = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["envs"]["oldest"]
    pins = oldest["overrides"]["matrix"]["backend"]["extra-dependencies"]
    assert pins, "no oldest-SDK cell"
    for pin in pins:
        (backend,) = pin["if"]
        sdk, version = pin["value"].split("==")
        package = tomllib.loads((ROOT / "packages" / backend / "pyproject.toml").read_text())["project"]
        bounds = [re.sub(r"\s", "", dep) for dep in package["dependencies"] if re.match(rf"{sdk}\b", dep)]
        floor = re.search(r">=([\w.]+)", bounds[0]).group(1)
        assert version == floor or version.startswith(floor + "."), (pin, bounds)
