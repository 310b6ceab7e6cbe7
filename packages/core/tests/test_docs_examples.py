"""Every ```python example of the documentation site (docs/) runs, so the docs cannot promise what the code does not do.

A page's examples run in order in one fresh interpreter (later examples may use names from earlier ones),
in a temporary working directory, with the sections the page includes from READMEs expanded as the site
build expands them (pymdownx.snippets). A block right after a ``<!-- not-run ... -->`` comment is
illustrative and left out; keep those few. Backends whose package is not installed in this environment
are registered as in-memory stand-ins under their names, so an example that logs to ``mlflow`` still runs
through the real dispatcher here.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
#: The framework integrations' pages need torch and the framework: their own cells run them
#: (packages/integrations/*/tests), with this module's script builder.
FRAMEWORK_PAGES = DOCS / "integrations"
PAGES = sorted(page for page in DOCS.rglob("*.md") if FRAMEWORK_PAGES not in page.parents)

_INCLUDE = re.compile(
    r'^(?P<indent>[ \t]*)--8<--[ \t]+"(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"[ \t]*$', re.MULTILINE
)
_MARKER = re.compile(r"^.*--8<-- \[(?:start|end):[\w-]+\].*\n?", re.MULTILINE)
_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```python[^\n]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$", re.MULTILINE | re.DOTALL
)
_NOT_RUN = re.compile(r"<!--\s*not-run\b[^>]*-->\s*$")

#: Backend names the examples may use; each one not installed here gets an in-memory stand-in.
BACKENDS = ("tensorboard", "mlflow", "aim", "trackio", "wandb", "comet_ml", "clearml", "swanlab", "dvclive")

PRELUDE = """
import tracking_core
from tracking_core.contract import registry
from tracking_core.testing import MemoryTracker

class _StandIn(MemoryTracker):
    def __init__(self, project_name, **options):  # takes any backend's init_kwargs (run_name, tags, ...)
        super().__init__(project_name)
        self.init_kwargs = options

for _name in {backends!r}:
    if _name not in registry.installed_entry_points():
        registry.register_tracker_class(type(f"StandIn_{{_name}}", (_StandIn,), {{"name": _name}}))
"""


def expand_includes(text: str) -> str:
    """The page as the site shows it: ``--8<-- "path"`` and ``--8<-- "path:section"`` replaced by what they name."""

    def include(match: re.Match[str]) -> str:
        included = (ROOT / match.group("path")).read_text(encoding="utf-8")
        section = match.group("section")
        if section:
            start = included.index(f"--8<-- [start:{section}]")
            end = included.index(f"--8<-- [end:{section}]", start)
            included = included[included.index("\n", start) + 1 : included.rindex("\n", 0, end) + 1]
        return textwrap.indent(_MARKER.sub("", included), match.group("indent"))

    return _INCLUDE.sub(include, text)


def examples(page: Path) -> list[tuple[int, str]]:
    """The page's runnable python blocks, with their line in the expanded page (for failure messages)."""
    text = expand_includes(page.read_text(encoding="utf-8"))
    blocks = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if _NOT_RUN.search(before):
            continue
        blocks.append((text.count("\n", 0, match.start()) + 2, textwrap.dedent(match.group("code"))))
    return blocks


def script_for(page: Path) -> str:
    name = page.relative_to(DOCS).as_posix()
    parts = [PRELUDE.format(backends=BACKENDS)]
    for line, code in examples(page):
        parts.append(f"exec(compile({code!r}, {f'docs/{name}, example at line {line}'!r}, 'exec'))")
    return "\n".join(parts)


def test_every_page_is_checked():
    """The examples the site shows are found: a change in fence or include syntax must not silence this test."""
    counted = {page.relative_to(DOCS).as_posix(): len(examples(page)) for page in PAGES}
    assert counted["quickstart.md"] >= 4
    assert counted["concepts.md"] >= 6  # its own, the resume example among them
    assert sum(counted.values()) >= 25, counted


def test_not_run_blocks_stay_few():
    not_run = sum(len(re.findall(r"<!--\s*not-run\b", expand_includes(page.read_text()))) for page in PAGES)
    # the sixth: docs/distributed.md's Ray example, which needs Ray; tests/ray runs it as printed
    assert not_run <= 6, "most examples must run; mark only the ones that cannot (external packages, unknown paths)"


@pytest.mark.parametrize("page", [p for p in PAGES if examples(p)], ids=lambda p: p.relative_to(DOCS).as_posix())
def test_page_examples_run(page: Path, tmp_path: Path):
    # A fresh interpreter per page: examples start runs, register trackers and set environment variables.
    result = subprocess.run(
        [sys.executable, "-c", script_for(page)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"an example of docs/{page.relative_to(DOCS)} failed:\n{result.stderr[-4000:]}"
