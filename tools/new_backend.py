"""Scaffold a built-in backend package and register it everywhere a built-in is named.

    python tools/new_backend.py NAME --sdk MODULE [--requirement "pkg>=1.2"] [--title Title]
                                [--class-name NameTracker] [--embedded "where it writes"] [--root .]

writes ``packages/NAME`` and ``docs/backends/NAME.md``, then adds the backend to the table of built-ins
(``tracking_core/contract/builtins.py``, which the registry, ``tracking list``, the benchmarks and the
cell-isolation test read) and to what cannot read it: the ``LoggerType`` names, the root
``pyproject.toml`` (test matrix, mypy paths, the SDK's missing stubs), the docs nav and API page, and
the README's table of backends. ``packages/core/tests/test_builtins_table.py`` checks that all of
those agree.

The package has the layout every backend follows, and imports only ``tracking_core`` (the contract)
and ``tracking_core.kit`` (the backend author's helpers):

- ``tracker.py``: the ``GeneralTracker`` subclass, the contract's methods mapped to the SDK's calls;
- ``startup.py``: starting the SDK's run, and resuming the one an earlier process saved;
- ``reader.py``: reading a run back with the SDK's own reader (read-back, tests, the importer);
- ``importer.py``: ``tracking import NAME <folder>`` (the ``tracking.importers`` entry point);
- ``older/``: code for older SDK releases, one module per release line (``older/v0_6.py``);
- ``tests/``: core's contract suite and the importer against the SDK; no module over 450 lines.

The generated code is written against a generic SDK surface, each call marked ``# SDK:``
(``MODULE.init(project=, name=, dir=, id=)`` returning a run with ``id``, ``dir``, ``log(values,
step=)``, ``set_config(config)``, ``finish()``; readers ``MODULE.read_metrics(dir)``,
``read_texts(dir)``, ``read_config(dir)``; ``MODULE.find_runs(folder)`` listing run folders): replace
those with the SDK's real calls and readers.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILTINS = Path("packages/core/src/tracking_core/contract/builtins.py")
REGISTRY = Path("packages/core/src/tracking_core/contract/registry.py")
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


def class_name_for(name: str) -> str:
    """``comet_ml`` -> ``CometMlTracker``."""
    return "".join(part.capitalize() for part in name.split("_")) + "Tracker"


# -- the package -----------------------------------------------------------------------------------------
PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.27"]
build-backend = "hatchling.build"

[project]
name = "{package}"
dynamic = ["version"]
description = "{title} backend for tracking."
readme = "README.md"
requires-python = ">=3.10"
license = "Apache-2.0"
dependencies = [
  "tracking-core>=0.1,<0.2",
  "{requirement}",
]
authors = [{{ name = "The tracking authors" }}]
keywords = ["experiment tracking", "machine learning", "mlops", "{name}"]
classifiers = [
  "Development Status :: 3 - Alpha",
  "Intended Audience :: Developers",
  "Intended Audience :: Science/Research",
  "Operating System :: OS Independent",
  "Programming Language :: Python :: 3",
  "Programming Language :: Python :: 3 :: Only",
  "Topic :: Scientific/Engineering :: Artificial Intelligence",
  "Typing :: Typed",
]

[project.urls]
Homepage = "https://github.com/tracking-dev/tracking"
Repository = "https://github.com/tracking-dev/tracking/tree/main/packages/{name}"
Issues = "https://github.com/tracking-dev/tracking/issues"
Changelog = "https://github.com/tracking-dev/tracking/blob/main/packages/{name}/CHANGELOG.md"

[project.optional-dependencies]
test = ["pytest>=8", "numpy", "pillow"]

[project.entry-points."tracking.backends"]
{name} = "{module}:{class_name}"

[project.entry-points."tracking.importers"]
{name} = "{module}.importer:read_runs"

[tool.uv.sources]
tracking-core = {{ workspace = true }}

[tool.hatch.version]
path = "src/{module}/__about__.py"

[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]
"""

INIT = '''\
"""{title} backend for tracking (``log_with="{name}"``).

Importing this package does not import {sdk}: the SDK is loaded in ``{class_name}.start()``.
"""

from .__about__ import __version__
from .tracker import {class_name}

__all__ = ["{class_name}", "__version__"]
'''

TRACKER = '''\
"""``{class_name}``: the mapping from tracking's calls to {sdk}'s.

Each line marked ``# SDK:`` is where {sdk}'s own call goes. Starting (and resuming) the run is in
``startup.py``, reading it back in ``reader.py``. Optional capabilities (``log_images``,
``log_table``, ``log_figure``, ``log_artifact``...) are methods to add when the SDK has them; the
contract suite tests each one that is there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tracking_core import GeneralTracker
from tracking_core.kit import merge_config, sdk_object

from . import reader, startup


class {class_name}(GeneralTracker):
    """Writes a run through {sdk}, in ``<run folder>/{name}`` unless ``dir=`` says where."""

    name = "{name}"
    requires_logging_directory = False

    def __init__(self, run_name: str, logging_dir: str | os.PathLike[str] | None = None, **init_kwargs: Any) -> None:
        super().__init__()
        self.run_name = run_name
        self.logging_dir = Path(logging_dir) if logging_dir is not None else None
        self.init_kwargs = init_kwargs
        self.run_dir: Path | None = None
        self._run: Any = None
        self._config: dict[str, Any] = {{}}

    tracker = run = sdk_object("_run", "The {sdk} run (``None`` before ``start()``).")

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._run = startup.start_run(self)
        self.run_dir = Path(self._run.dir)

    def resume_state(self) -> dict[str, Any] | None:
        return {{"id": self._run.id, "dir": str(self.run_dir)}}

    def finish(self) -> None:
        self._run.finish()  # SDK: close the run (waits until everything is written)

    # -- the mapping -------------------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """The config so far; a later call (``log_config``) merges nested sections key by key."""
        self._config = merge_config(self._config, values)
        self._run.set_config(self._config)  # SDK: store the whole config

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self._run.log(values, step=step)  # SDK: numbers and strings at this step

    # -- read-back (``tracking demo``, the shared tests) -------------------------------------------
    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        assert self.run_dir is not None, "read back after start()"
        return reader.read_metrics(self.run_dir)
'''

STARTUP = '''\
"""Starting a {sdk} run, or reopening the one an earlier process saved (``resume_state``).

Kept apart from the mapping in ``tracker.py``: what the SDK needs before its first call (its import,
its start keywords, per-rank names, the resume hand-shake) grows with each SDK release.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracking_core.kit import not_resumed, notice, per_rank, rank_name, saved_resume

if TYPE_CHECKING:
    from .tracker import {class_name}


def start_run(tracker: {class_name}) -> Any:
    """The SDK's run for ``tracker``, started in the worker thread (never at construction)."""
    import {sdk}

    context = tracker.run_context
    base = context.run_dir if context is not None else Path(tracker.logging_dir or ".")
    kwargs: dict[str, Any] = {{
        "project": tracker.run_name,
        "dir": str(base / "{name}"),
        **tracker.init_kwargs,
    }}
    rank = per_rank(tracker)
    if rank is not None:  # per-rank mode: one run per rank, named after it
        kwargs["name"] = rank_name(kwargs.get("name"), rank)
    continue_saved_run(tracker, kwargs)
    run = {sdk}.init(**kwargs)  # SDK: create (or reopen, with id=) the run
    notice(f"{name}: run {{run.id}} in {{run.dir}}")
    return run


def continue_saved_run(tracker: {class_name}, kwargs: dict[str, Any]) -> None:
    """Point the SDK at the run ``resume_state`` saved in an earlier process, when it is still there."""
    resume = saved_resume(tracker, "id", "{title} run")
    if resume is None:
        return
    saved, run_id = resume
    folder = Path(saved.get("dir") or "")
    if not saved.get("dir") or not folder.is_dir():
        not_resumed(
            tracker,
            f"could not resume {title} run {{run_id}} (its folder {{folder}} is gone); started a new run",
        )
        return
    kwargs["id"], kwargs["dir"] = run_id, str(folder)
'''

READER = '''\
"""Reading a {sdk} run back with {sdk}'s own reader: the tracker's read-back, the tests, the importer."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_metrics(run_dir: str | Path) -> dict[str, dict[int, Any]]:
    """``{{key: {{step: value}}}}`` of the numbers the run logged."""
    import {sdk}

    series: dict[str, dict[int, Any]] = {sdk}.read_metrics(str(run_dir))  # SDK: its own reader
    return series


def read_texts(run_dir: str | Path) -> dict[str, dict[int, str]]:
    """``{{key: {{step: text}}}}`` of the strings the run logged."""
    import {sdk}

    texts: dict[str, dict[int, str]] = {sdk}.read_texts(str(run_dir))  # SDK: its own reader
    return texts


def read_config(run_dir: str | Path) -> dict[str, Any]:
    """The run's config as the SDK stored it."""
    import {sdk}

    config: dict[str, Any] = {sdk}.read_config(str(run_dir))  # SDK: its own reader
    return config


def run_folders(folder: str | Path) -> list[Path]:
    """The run folders at or under ``folder``."""
    import {sdk}

    return [Path(found) for found in {sdk}.find_runs(str(folder))]  # SDK: how it lists its runs
'''

IMPORTER = '''\
"""``tracking import {name} <folder>``: {sdk} runs as journals, read with {sdk}'s own reader.

Registered as the ``tracking.importers`` entry point ``{name}``. A run is known by its folder's
absolute path, so importing the same folder again is idempotent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tracking_core.kit import Point, SourceError, SourceRun

from . import reader


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Yield one run per {sdk} run folder at or under ``source``."""
    root = Path(source)
    if not root.is_dir():
        raise SourceError(source, "not a folder of {title} runs")
    folders = reader.run_folders(root)
    if not folders:
        raise SourceError(source, "no {title} run here")
    for folder in folders:
        points = [
            Point(key, step, value)
            for series in (reader.read_metrics(folder), reader.read_texts(folder))
            for key, values in series.items()
            for step, value in values.items()
        ]
        yield SourceRun(
            backend="{name}",
            source_id=str(folder.resolve()),
            name=folder.name,
            project=folder.parent.name or None,
            config=reader.read_config(folder),
            points=points,
            location=str(folder),
        )
'''

OLDER = '''\
"""Code for older {sdk} releases, one module per release line (``v0_6.py`` for 0.6.x).

The current release's code stays in ``tracker.py``, ``startup.py`` and ``reader.py``; what an older
release needs instead lives here, chosen once by the installed version, so the newest code reads
without branches and a release line leaves by deleting its module.
"""
'''

CONTRACT_TEST = '''\
"""The core's contract suite against {sdk}, read back with its own reader."""

from __future__ import annotations

from tracking_core.testing import ContractRun, TrackerContract
from {module} import reader


class Test{class_name}Contract(TrackerContract):
    backend_name = "{name}"

    def read_metrics(self, run: ContractRun):
        return reader.read_metrics(run.tracker.run_dir)

    def read_texts(self, run: ContractRun):
        return reader.read_texts(run.tracker.run_dir)

    def read_config(self, run: ContractRun):
        return reader.read_config(run.tracker.run_dir)
'''

IMPORTER_TEST = '''\
"""``tracking import {name}``: a run written with {sdk} itself (not through this library), read back whole."""

from __future__ import annotations

import pytest
import {sdk}
from tracking_core.kit import SourceError
from {module}.importer import read_runs


def test_a_run_the_sdk_wrote_is_imported_whole(tmp_path):
    run = {sdk}.init(project="imported", dir=str(tmp_path / "store"))  # SDK: a run written by the SDK
    run.set_config({{"lr": 0.001, "optimizer": "adam"}})
    for step in range(3):
        run.log({{"train/loss": 1.0 / (step + 1), "note": f"step {{step}}"}}, step=step)
    run.finish()

    (imported,) = read_runs(str(tmp_path / "store"))

    assert imported.backend == "{name}" and imported.config == {{"lr": 0.001, "optimizer": "adam"}}
    losses = [("train/loss", step, 1.0 / (step + 1)) for step in range(3)]
    notes = [("note", step, f"step {{step}}") for step in range(3)]
    assert sorted((point.key, point.step, point.value) for point in imported.points) == sorted(losses + notes)


def test_a_folder_without_runs_is_refused(tmp_path):
    with pytest.raises(SourceError, match="no {title} run"):
        list(read_runs(str(tmp_path)))
'''

README = """\
# {package}

The `{name}` backend of **tracking**: writes a run's metrics, text and configuration through {sdk}.

```bash
pip install {package}        # pulls in tracking-core and {requirement}
```

```python
import tracking_core

with tracking_core.init("my-project", log_with="{name}", logging_dir="runs", config={{"lr": 3e-4}}) as run:
    for step in range(100):
        run.log({{"train/loss": 1 / (step + 1)}}, step=step)
```

Embedded default: {embedded}.
"""

CHANGELOG = """\
# Changelog — {package}

## 0.1.0 (unreleased)

- `{class_name}` (`log_with="{name}"`): metrics, text and the merged configuration through {sdk}.
"""

DOCS_PAGE = """\
# {title}

`log_with="{name}"`, from the [`{package}`](https://github.com/tracking-dev/tracking/tree/main/packages/{name})
package. It writes through {sdk}; with no account and no server: {embedded}.
"""

API_BLOCK = """
::: {module}.{class_name}
    options:
      members: false
"""


def write_package(root: Path, fields: dict[str, str]) -> list[Path]:
    """The package folder and its docs page; refuses to overwrite a folder that exists."""
    folder = root / "packages" / fields["name"]
    if folder.exists():
        raise SystemExit(f"{folder} exists already")
    source = folder / "src" / fields["module"]
    files = {
        folder / "pyproject.toml": PYPROJECT,
        folder / "README.md": README,
        folder / "CHANGELOG.md": CHANGELOG,
        source / "__init__.py": INIT,
        source / "__about__.py": '__version__ = "0.1.0"\n',
        source / "py.typed": "",
        source / "tracker.py": TRACKER,
        source / "startup.py": STARTUP,
        source / "reader.py": READER,
        source / "importer.py": IMPORTER,
        source / "older" / "__init__.py": OLDER,
        folder / "tests" / "test_contract.py": CONTRACT_TEST,
        folder / "tests" / "test_importer.py": IMPORTER_TEST,
        root / "docs" / "backends" / f"{fields['name']}.md": DOCS_PAGE,
    }
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**fields), encoding="utf-8")
    shutil.copyfile(root / "packages" / "core" / "LICENSE", folder / "LICENSE")
    return [*files, folder / "LICENSE"]


# -- registration ----------------------------------------------------------------------------------------
def _insert(text: str, anchor: re.Pattern[str], addition: str, *, after: bool, where: str) -> str:
    """``addition`` at the start (or the end) of the last match of ``anchor``."""
    matches = list(anchor.finditer(text))
    if not matches:
        raise SystemExit(f"cannot find where to register the backend in {where} ({anchor.pattern!r})")
    at = matches[-1].end() if after else matches[-1].start()
    return text[:at] + addition + text[at:]


def _edit(root: Path, relative: str | Path, change: Callable[[str], str]) -> Path:
    path = root / relative
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
    return path


def register(root: Path, fields: dict[str, str]) -> list[Path]:
    """Add the backend to the table of built-ins and to each place that cannot read it."""
    name, sdk = fields["name"], fields["sdk"]
    row = (
        "    BuiltIn(\n"
        + "".join(
            f"        {json.dumps(value, ensure_ascii=False)},\n"
            for value in (
                name,
                f"{fields['module']}:{fields['class_name']}",
                sdk,
                fields["embedded"],
                fields["title"],
                fields["requirement"],
            )
        )
        + "    ),\n"
    )
    edits = [
        _edit(
            root, BUILTINS, lambda text: _insert(text, re.compile(r"^\)\n", re.M), row, after=False, where="builtins")
        ),
        _edit(
            root,
            REGISTRY,
            lambda text: _insert(
                text,
                re.compile(r"^    [A-Z_]+ = \"[a-z0-9_]+\"\n(?=\n    def __str__)", re.M),
                f'    {name.upper()} = "{name}"\n',
                after=True,
                where="registry.LoggerType",
            ),
        ),
    ]

    def pyproject(text: str) -> str:
        text = _insert(
            text,
            re.compile(r"(?<=\[\[tool\.hatch\.envs\.test\.matrix\]\]\nbackend = \[)[^\]]*(?=\])"),
            f', "{name}"',
            after=True,
            where="pyproject.toml (test matrix)",
        )
        for block in ("mypy_path", "files"):
            suffix = "/src" if block == "mypy_path" else f"/src/{fields['module']}"
            text = _insert(
                text,
                re.compile(rf"(?<=\n{block} = \[\n)(?:  \"packages/(?!integrations/)[^\"]+\",\n)+"),
                f'  "packages/{name}{suffix}",\n',
                after=True,
                where=f"pyproject.toml ({block})",
            )
        top = sdk.split(".")[0]
        return _insert(
            text,
            re.compile(r"(?<=\[\[tool\.mypy\.overrides\]\]\nmodule = \[\n)"),
            f'  "{top}.*",\n',
            after=True,
            where="pyproject.toml (mypy overrides)",
        )

    def mkdocs(text: str) -> str:
        text = _insert(
            text,
            re.compile(r"^      - [^\n]+: backends/(?!index\b)\w+\.md\n", re.M),
            f"      - {fields['title']}: backends/{name}.md\n",
            after=True,
            where="mkdocs.yml (nav)",
        )
        return _insert(
            text,
            re.compile(r"^( +)- packages/(?!integrations/)\w+/src\n", re.M),
            f"            - packages/{name}/src\n",
            after=True,
            where="mkdocs.yml (mkdocstrings paths)",
        )

    def readme(text: str) -> str:
        row = f"| `{name}` | `{fields['package']}` | `{fields['requirement']}` | {fields['embedded']} |\n"
        start = text.index("<!-- --8<-- [start:backends] -->")
        table = re.compile(r"(?:^\| `\w+` \|[^\n]*\n)+", re.M).search(text, start)
        if table is None:
            raise SystemExit("cannot find the README's table of backends")
        return text[: table.end()] + row + text[table.end() :]

    edits += [
        _edit(root, "pyproject.toml", pyproject),
        _edit(root, "mkdocs.yml", mkdocs),
        _edit(root, "docs/api/backends.md", lambda text: text.rstrip("\n") + "\n" + API_BLOCK.format(**fields)),
        _edit(root, "README.md", readme),
    ]
    return edits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name", help="the log_with name: lower case, digits and _ (also the package folder)")
    parser.add_argument("--sdk", required=True, help="the SDK module the backend imports")
    parser.add_argument("--requirement", help="the SDK's requirement (default: the module's name, no bound)")
    parser.add_argument("--title", help="the name people know it by (default: NAME capitalised)")
    parser.add_argument("--class-name", help="the tracker class (default: <Name>Tracker)")
    parser.add_argument("--embedded", help="where it writes with no account and no server")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    args = parser.parse_args(argv)
    if not _NAME.match(args.name) or args.name in ("core", "integrations"):
        parser.error(f"{args.name!r} is not a backend name (lower case, digits and _, starting with a letter)")
    if not _MODULE.match(args.sdk):
        parser.error(f"{args.sdk!r} is not a module name")
    fields = {
        "name": args.name,
        "sdk": args.sdk,
        "module": f"tracking_{args.name}",
        "package": f"tracking-{args.name.replace('_', '-')}",
        "class_name": args.class_name or class_name_for(args.name),
        "title": args.title or args.name.replace("_", " ").title(),
        "requirement": args.requirement or args.sdk.split(".")[0].replace("_", "-"),
        "embedded": args.embedded or f"a {args.sdk} run in <logging_dir>/<project>/<run>/{args.name}",
    }
    root = args.root.resolve()
    write_package(root, fields)
    edited = register(root, fields)
    print(f"wrote packages/{args.name} and docs/backends/{args.name}.md; registered it in:")
    for path in edited:
        print(f"  {path.relative_to(root)}")
    print(
        textwrap.dedent(f"""\
        next: replace the `# SDK:` lines in packages/{args.name}/src/{fields["module"]}/ (tracker.py,
        startup.py, reader.py) and tests/test_importer.py with {args.sdk}'s own calls; then
        `hatch run lint:fix` and `hatch run test.{args.name}:unit`.""")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
