"""``tools/new_backend.py`` makes a package that passes the contract suite, registered wherever built-ins are named.

The scaffold runs into a copy of the files it edits; the generated package's own tests (the contract
suite and its importer) then run in a fresh interpreter against a tiny local "SDK" (one JSON line per
call, with readers), found through a ``tracking.backends`` entry point as an installed package would be.
The package has the layout every backend follows and imports nothing of core's but its two faces.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import runpy
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCAFFOLD = ROOT / "tools" / "new_backend.py"
pytestmark = pytest.mark.skipif(not SCAFFOLD.is_file(), reason="needs the source tree")

#: the files the scaffold edits (and the licence it copies)
EDITED = [
    "pyproject.toml",
    "mkdocs.yml",
    "README.md",
    "docs/api/backends.md",
    "packages/core/LICENSE",
    "packages/core/src/tracking_core/contract/builtins.py",
    "packages/core/src/tracking_core/contract/registry.py",
]

TINY_SDK = '''
"""A stand-in SDK: a run is a folder with events.jsonl (one line per log call) and config.json."""
import json
import uuid
from pathlib import Path


class Run:
    def __init__(self, dir, id):
        self.id, self.dir = id, dir
        self._events = open(Path(dir) / "events.jsonl", "a", encoding="utf-8")

    def log(self, values, step=None):
        self._events.write(json.dumps({"step": step, "values": values}) + "\\n")
        self._events.flush()

    def set_config(self, config):
        (Path(self.dir) / "config.json").write_text(json.dumps(config, default=str))

    def finish(self):
        self._events.close()


def init(project, dir, name=None, id=None, **kwargs):
    run_id = id or uuid.uuid4().hex[:8]
    folder = Path(dir) / run_id if id is None else Path(dir)
    folder.mkdir(parents=True, exist_ok=True)
    return Run(str(folder), run_id)


def _events(dir):
    with open(Path(dir) / "events.jsonl", encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            yield event["step"], event["values"]


def read_metrics(dir):
    series = {}
    for step, values in _events(dir):
        for key, value in values.items():
            if not isinstance(value, str):
                series.setdefault(key, {})[step] = value
    return series


def read_texts(dir):
    texts = {}
    for step, values in _events(dir):
        for key, value in values.items():
            if isinstance(value, str):
                texts.setdefault(key, {})[step] = value
    return texts


def read_config(dir):
    return json.loads((Path(dir) / "config.json").read_text())


def find_runs(folder):
    return sorted(str(events.parent) for events in Path(folder).rglob("events.jsonl"))
'''

#: the one layout of a backend package's source
LAYOUT = {"__init__.py", "__about__.py", "py.typed", "tracker.py", "startup.py", "reader.py", "importer.py", "older"}
#: what a backend package may import of core's: the contract and the backend author's kit
FACES = {"tracking_core", "tracking_core.kit"}


def _scaffold(root: Path, *args: str) -> None:
    scaffold = runpy.run_path(str(SCAFFOLD))
    assert scaffold["main"]([*args, "--root", str(root)]) == 0


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for relative in EDITED:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / relative, root / relative)
    return root


def test_the_scaffold_registers_the_backend_wherever_built_ins_are_named(repo: Path, capsys):
    tomllib = pytest.importorskip("tomllib")
    _scaffold(repo, "tinylog", "--sdk", "tinysdk", "--title", "TinyLog", "--requirement", "tinysdk>=1.0")
    assert "packages/tinylog" in capsys.readouterr().out

    table = runpy.run_path(str(repo / "packages/core/src/tracking_core/contract/builtins.py"))
    row = table["BY_NAME"]["tinylog"]
    assert row.entry_point == "tracking_tinylog:TinylogTracker" and row.sdk == "tinysdk"
    assert row.package == "tracking-tinylog" and table["BACKEND_PACKAGES"][-1] == "tinylog"
    assert 'TINYLOG = "tinylog"' in (repo / "packages/core/src/tracking_core/contract/registry.py").read_text()

    config = tomllib.loads((repo / "pyproject.toml").read_text())
    assert config["tool"]["hatch"]["envs"]["test"]["matrix"][0]["backend"][-1] == "tinylog"
    assert "packages/tinylog/src" in config["tool"]["mypy"]["mypy_path"]
    assert "packages/tinylog/src/tracking_tinylog" in config["tool"]["mypy"]["files"]
    assert "tinysdk.*" in config["tool"]["mypy"]["overrides"][0]["module"]
    package = tomllib.loads((repo / "packages/tinylog/pyproject.toml").read_text())["project"]
    assert package["entry-points"]["tracking.backends"] == {"tinylog": row.entry_point}
    assert "tinysdk>=1.0" in package["dependencies"]

    nav = (repo / "mkdocs.yml").read_text()
    assert "- TinyLog: backends/tinylog.md" in nav and "- packages/tinylog/src" in nav
    assert (repo / "docs/backends/tinylog.md").is_file()
    assert "::: tracking_tinylog.TinylogTracker" in (repo / "docs/api/backends.md").read_text()
    assert "| `tinylog` | `tracking-tinylog` | `tinysdk>=1.0` |" in (repo / "README.md").read_text()

    assert package["entry-points"]["tracking.importers"] == {"tinylog": "tracking_tinylog.importer:read_runs"}

    with pytest.raises(SystemExit, match="exists already"):  # a second run changes nothing
        _scaffold(repo, "tinylog", "--sdk", "tinysdk")


def _core_imports(path: Path) -> set[str]:
    """The ``tracking_core`` modules a file imports (anywhere in it, functions included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return {name for name in found if name.split(".")[0] == "tracking_core"}


def test_the_scaffolded_package_has_the_backend_layout_and_imports_only_cores_faces(repo: Path):
    _scaffold(repo, "tinylog", "--sdk", "tinysdk")
    source = repo / "packages" / "tinylog" / "src" / "tracking_tinylog"
    assert {path.name for path in source.iterdir()} == LAYOUT
    assert (source / "older" / "__init__.py").is_file()
    modules = sorted(source.rglob("*.py"))
    assert all(len(path.read_text(encoding="utf-8").splitlines()) <= 450 for path in modules)
    imported = set().union(*(_core_imports(path) for path in modules))
    assert imported == FACES, imported
    tests = sorted((repo / "packages" / "tinylog" / "tests").glob("*.py"))
    assert {path.name for path in tests} == {"test_contract.py", "test_importer.py"}
    assert set().union(*(_core_imports(path) for path in tests)) <= {*FACES, "tracking_core.testing"}


def test_the_scaffolded_package_passes_the_contract_suite(repo: Path, tmp_path: Path):
    if importlib.util.find_spec("numpy") is None:
        pytest.skip("the contract suite's value tests need numpy")
    _scaffold(repo, "tinylog", "--sdk", "tinysdk")
    package = repo / "packages" / "tinylog"
    sdk, metadata = tmp_path / "sdk", tmp_path / "metadata"
    sdk.mkdir()
    (sdk / "tinysdk.py").write_text(textwrap.dedent(TINY_SDK))
    info = metadata / "tracking_tinylog-0.1.0.dist-info"  # what installing the package would declare
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tracking-tinylog\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        "[tracking.backends]\ntinylog = tracking_tinylog:TinylogTracker\n\n"
        "[tracking.importers]\ntinylog = tracking_tinylog.importer:read_runs\n"
    )
    path = os.pathsep.join([str(package / "src"), str(sdk), str(metadata), os.environ.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", str(package / "tests")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and " failed" not in result.stdout, result.stdout[-2000:]
    for test in ("test_a_run_the_sdk_wrote_is_imported_whole", "test_a_folder_without_runs_is_refused"):
        assert f"test_importer.py::{test} PASSED" in result.stdout, result.stdout[-2000:]
