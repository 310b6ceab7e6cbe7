"""The subpackages of ``tracking_core`` form layers that import one way: down, never up.

Read from the source (``ast``), not by importing it. Only imports a module makes when it is loaded
count: an import inside a function is deliberately lazy (a command's module, an optional SDK, a
record kind's decoder) and is exempt, and so is one under ``TYPE_CHECKING`` (never run). The old top-level module paths are one-line re-exports kept
for code written against them; code inside the subpackages must not import through them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tracking_core

PACKAGE = Path(tracking_core.__file__).parent

#: Lowest first. A module may import its own layer and the layers before it.
LAYERS: list[tuple[str, ...]] = [
    ("__about__", "errors", "notices", "report"),  # foundation: imported by every layer
    ("contract",),  # what a backend implements; which backends exist
    ("intake",),  # what a call becomes in the caller's thread
    ("kit",),  # the backend author's helpers
    ("store",),  # on-disk formats: run journal, run.json, cursor files
    ("backends",),  # the jsonl backend
    ("delivery",),  # one backend's worker and Delivery; spill journals
    ("process",),  # delivery="process"
    ("context",),  # run context: system metrics sampler, what reproduces the run
    ("run",),  # Dispatcher, session, lifecycle
    ("cli", "transfer"),  # the tracking command, import/export
    ("testing",),  # the testing kit shipped to backend packages
]
LAYER_OF = {name: index for index, names in enumerate(LAYERS) for name in names}
#: The package's face: ``__init__`` loads the rest lazily, ``__main__`` is the command.
FACE = {"__init__", "__main__"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["tracking_core", *parts])


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def loaded_imports(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``tracking_core`` module imported when ``module`` loads (not inside a function)."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                continue  # for the type checker only: never imported when the module loads
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if child.module is None or (PACKAGE.parent / target.replace(".", "/")).is_dir():
                    # ``from . import x`` / ``from .pkg import x``: x may be a module of that package
                    for alias in child.names:
                        candidate = f"{target}.{alias.name}"
                        sub = PACKAGE.parent / candidate.replace(".", "/")
                        is_module = sub.with_suffix(".py").exists() or sub.is_dir()
                        found.append((child.lineno, candidate if is_module else target))
                else:
                    found.append((child.lineno, target))
            else:
                visit(child)

    visit(ast.parse(source))
    return [(line, name) for line, name in found if name == "tracking_core" or name.startswith("tracking_core.")]


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYER_OF.get(parts[1]) if len(parts) > 1 else None


def _is_old_path(module: str) -> bool:
    """An old top-level module path (a re-export) rather than a foundation module or a subpackage."""
    parts = module.split(".")
    return len(parts) == 2 and parts[1] not in LAYER_OF and parts[1] not in FACE


def problems(source: str, module: str, is_package: bool = False) -> list[str]:
    layer = _layer(module)
    if layer is None:
        return []
    found = []
    for line, target in loaded_imports(source, module, is_package):
        if target == "tracking_core":
            found.append(f"{module}:{line} imports the package face `tracking_core` (import the module itself)")
        elif _is_old_path(target):
            found.append(f"{module}:{line} imports {target}, an old path kept for outside code")
        elif (target_layer := _layer(target)) is not None and target_layer > layer:
            found.append(
                f"{module}:{line} imports {target}, a layer above it ({LAYERS[target_layer]} > {LAYERS[layer]})"
            )
    return found


def test_every_module_belongs_to_a_layer_or_is_an_old_path():
    for path in PACKAGE.glob("*"):
        if path.name.startswith(("_", ".")) or path.name == "py.typed":
            continue
        name = path.stem
        assert name in LAYER_OF or (path.suffix == ".py" and _old_path_is_a_re_export(path)), path


def _old_path_is_a_re_export(path: Path) -> bool:
    """Nothing but imports of the new module and ``sys.modules[__name__] = <it>``: an alias, no code of its own."""
    tree = ast.parse(path.read_text())
    body = [node for node in tree.body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    star = any(isinstance(node, ast.ImportFrom) and node.names[0].name == "*" for node in body)
    aliased = any(isinstance(node, ast.Assign) and "sys.modules[__name__]" in ast.unparse(node) for node in body)
    rest = [node for node in body if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign))]
    return star and aliased and not rest


def test_layers_import_one_way():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += problems(path.read_text(), _module_name(path), _is_package(path))
    assert not found, "\n".join(found)


def test_an_upward_import_is_caught():
    source = "from ..run.dispatcher import Dispatcher\n"
    assert problems(source, "tracking_core.delivery.engine") == [
        "tracking_core.delivery.engine:1 imports tracking_core.run.dispatcher, a layer above it "
        "(('run',) > ('delivery',))"
    ]
    assert problems("from .. import worker\n", "tracking_core.run.dispatcher") == [
        "tracking_core.run.dispatcher:1 imports tracking_core.worker, an old path kept for outside code"
    ]
    lazy = "def later():\n    from ..run.dispatcher import Dispatcher\n"
    assert problems(lazy, "tracking_core.delivery.engine") == []
    assert problems("from ..store.journal import read_journal\n", "tracking_core.delivery.engine") == []
