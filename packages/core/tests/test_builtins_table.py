"""The table of built-in backends (``tracking_core/contract/builtins.py``) and every place that names them agree.

Python reads the table; what cannot (the Hatch matrix and mypy paths in the root ``pyproject.toml``,
the docs nav and API page, the README table, each package's entry point) is written by
``tools/new_backend.py`` and checked here, so a backend added by hand cannot be half registered.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tracking_core.contract.backends_info import EMBEDDED_DEFAULTS, SDK_MODULES
from tracking_core.contract.builtins import BACKEND_PACKAGES, BUILT_INS, BY_NAME
from tracking_core.contract.registry import BUILT_IN_CLASSES, LoggerType, package_for

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(not (ROOT / "packages" / "core").is_dir(), reason="needs the source tree")


def _toml(path: Path) -> dict:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_the_registry_and_tracking_list_read_the_table():
    assert BUILT_IN_CLASSES == {row.name: row.entry_point for row in BUILT_INS}
    assert set(EMBEDDED_DEFAULTS) == set(SDK_MODULES) == set(BY_NAME)
    assert sorted(member.value for member in LoggerType) == sorted(["all", *BY_NAME])
    assert package_for("comet_ml") == "tracking-comet-ml" and package_for("jsonl") == "tracking-core"


def test_every_backend_folder_is_a_row_and_every_row_a_folder():
    folders = {project.parent.name for project in (ROOT / "packages").glob("*/pyproject.toml")} - {"core"}
    assert folders == set(BACKEND_PACKAGES)


@pytest.mark.parametrize("name", BACKEND_PACKAGES)
def test_the_package_declares_the_tables_entry_point_and_name(name):
    project = _toml(ROOT / "packages" / name / "pyproject.toml")["project"]
    assert project["name"] == BY_NAME[name].package
    assert project["entry-points"]["tracking.backends"] == {name: BY_NAME[name].entry_point}


def test_the_root_pyproject_names_every_backend():
    config = _toml(ROOT / "pyproject.toml")
    assert config["tool"]["hatch"]["envs"]["test"]["matrix"][0]["backend"] == list(BACKEND_PACKAGES)
    mypy = config["tool"]["mypy"]
    for name in BACKEND_PACKAGES:
        assert f"packages/{name}/src" in mypy["mypy_path"]
        assert f"packages/{name}/src/{BY_NAME[name].module}" in mypy["files"]


def test_the_docs_and_readme_name_every_backend():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    api = (ROOT / "docs" / "api" / "backends.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for row in BUILT_INS:
        assert f"- {row.title}: backends/{row.name}.md" in nav
        assert (ROOT / "docs" / "backends" / f"{row.name}.md").is_file()
        assert re.search(rf"^\| `{row.name}` \| `{row.package}` \|", readme, re.MULTILINE)
        if row.sdk is not None:
            assert f"- packages/{row.name}/src" in nav
            assert f"::: {row.entry_point.replace(':', '.')}" in api
