"""Core's public faces: ``tracking_core`` (the contract), ``tracking_core.kit`` (the backend author's
helpers), and behind them only real modules, no alias module (a file that makes its name another
module's with ``sys.modules[__name__] = ...``).

The package was never released under other module paths, so none is kept for old imports. The aliases
a backend package still imports (or its docs still name) are listed in :data:`STILL_IMPORTED` until that
package uses the module itself or a face; an entry whose last user has gone fails, saying to delete the
alias.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest
import tracking_core
import tracking_core.kit

PACKAGE = Path(tracking_core.__file__).parent
ROOT = PACKAGE.parents[3]

#: Top-level alias modules a backend package still imports or names in its docs (name -> its real module); each
#: goes with its last user.
STILL_IMPORTED: dict[str, str] = {}


def is_alias(source: str) -> bool:
    """Whether a module replaces itself in ``sys.modules`` (``sys.modules[__name__] = ...``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and ast.unparse(target) == "sys.modules[__name__]":
                    return True
    return False


def _aliases() -> dict[str, Path]:
    return {
        ".".join(path.relative_to(PACKAGE).with_suffix("").parts): path
        for path in sorted(PACKAGE.rglob("*.py"))
        if is_alias(path.read_text(encoding="utf-8"))
    }


def test_no_module_is_an_alias_of_another():
    unexpected = sorted(set(_aliases()) - set(STILL_IMPORTED))
    assert not unexpected, f"alias modules (import the real module instead, and delete these): {unexpected}"


def test_an_alias_is_recognised():
    assert is_alias("import sys\nfrom .kit import png as _module\nsys.modules[__name__] = _module\n")
    assert not is_alias("import sys\nmodule = sys.modules[__name__]\n")


SCANNED = (".py", ".toml", ".md", ".yml", ".cfg")
#: folders that hold no source: tool caches, environments, the built site, the demo's runs
SKIPPED = {"site", "runs", "node_modules", "__pycache__"}


def _repository_texts() -> dict[str, str]:
    texts = {}
    for folder, folders, files in os.walk(ROOT):
        folders[:] = [name for name in folders if not name.startswith(".") and name not in SKIPPED]
        for name in files:
            if name.endswith(SCANNED):
                path = Path(folder, name)
                texts[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8", errors="replace")
    return texts


def _users(name: str, texts: dict[str, str]) -> list[str]:
    """The repository's files that import ``tracking_core.<name>`` or name it (code, configuration, docs)."""
    pattern = re.compile(rf"tracking_core\.{name}\b|from tracking_core import [^\n]*\b{name}\b")
    own = str((PACKAGE / f"{name}.py").relative_to(ROOT))
    return [path for path, text in texts.items() if path != own and pattern.search(text)]


@pytest.mark.skipif(not (ROOT / "packages" / "core").is_dir(), reason="needs the source tree")
def test_each_alias_left_is_still_imported_somewhere():
    aliases, texts = _aliases(), _repository_texts()
    gone = [name for name in STILL_IMPORTED if name in aliases and not _users(name, texts)]
    assert not gone, f"nothing imports these aliases any more: delete them and their STILL_IMPORTED entry: {gone}"
    deleted = [name for name in STILL_IMPORTED if name not in aliases]
    assert not deleted, f"deleted aliases still listed in STILL_IMPORTED: {deleted}"


def test_each_alias_left_names_its_real_module():
    import importlib

    for name, real in STILL_IMPORTED.items():
        assert importlib.import_module(f"tracking_core.{name}") is importlib.import_module(real), name


@pytest.mark.parametrize("face", [tracking_core, tracking_core.kit], ids=lambda face: face.__name__)
def test_every_name_a_face_lists_resolves(face):
    for name in face.__all__:
        assert getattr(face, name) is not None, name
    assert len(set(face.__all__)) == len(face.__all__)
    assert set(face.__all__) <= set(dir(face))


def test_the_kit_lists_what_it_loads():
    kit = tracking_core.kit
    assert set(kit._WHERE) | {"store_cache"} == set(kit.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        kit.nothing_here  # noqa: B018
