"""The subpackages of ``tracking_core`` form layers that import one way: down, never up.

Read from the source (``ast``), not by importing it. Every import counts, wherever it is: at the top of
a module, inside a function (a lazy import still makes the lower layer depend on the upper one), and a
call of ``importlib.import_module`` with a literal name. Only an import under ``TYPE_CHECKING`` is left
out: it is never run, and a type may name a class of any layer.

An in-function import that goes up is allowed only when :data:`ALLOWED` names it with the reason; an
entry no longer needed fails the test too, so the list only shrinks.

The two faces re-export names from every layer, loaded on first use, and are the documented exceptions:
``tracking_core/__init__.py`` (the public contract, ``from tracking_core import init``) has no layer
of its own, and ``tracking_core/kit/__init__.py`` (``from tracking_core.kit import ...``, the backend
author's helpers) names the context, the store and the import model above the kit's layer. Neither
face is imported by code inside the package, so what they reach up to cannot form a cycle; they look
their modules up by computed name, and a test of their own (``test_faces.py``) resolves every name.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import tracking_core

PACKAGE = Path(tracking_core.__file__).parent

#: Lowest first. A module may import its own layer and the layers before it.
LAYERS: list[tuple[str, ...]] = [
    ("__about__", "errors", "notices", "report"),  # foundation: imported by every layer
    ("contract",),  # what a backend implements; which backends exist; the rewind marker it stores
    ("intake",),  # what a call becomes in the caller's thread
    ("kit",),  # the backend author's helpers
    ("store",),  # on-disk formats: run journal (and the records its lines are), run.json, cursors, rewinds
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
#: The faces that re-export names of any layer (see the module docstring): not checked.
FACES = {"tracking_core", "tracking_core.kit"}

#: ``(importing module, imported module): reason`` for each in-function import that goes up a layer.
ALLOWED: dict[tuple[str, str], str] = {}


class Import(NamedTuple):
    line: int
    target: str
    in_function: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["tracking_core", *parts])


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _is_module(name: str) -> bool:
    where = PACKAGE.parent / name.replace(".", "/")
    return where.with_suffix(".py").exists() or where.is_dir()


def _absolute(name: str, level: int, package: str) -> str:
    if not level:
        return name
    base = package.split(".")[: len(package.split(".")) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _import_module_call(node: ast.Call, module: str, package: str) -> str | None:
    """The module an ``importlib.import_module("literal"[, __name__ / __package__])`` call names."""
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    if name != "import_module" or not node.args:
        return None
    first = node.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None  # a computed name: only the faces do that, and they are not checked
    text = first.value
    if not text.startswith("."):
        return text
    anchor = node.args[1] if len(node.args) > 1 else None  # the package a relative name starts from
    start = module if isinstance(anchor, ast.Name) and anchor.id == "__name__" else package
    level = len(text) - len(text.lstrip("."))
    return _absolute(text[level:], level, start)


def imports(source: str, module: str, is_package: bool) -> list[Import]:
    """Every ``tracking_core`` module ``module`` imports, with where and whether inside a function."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                for statement in child.orelse:  # the ``if`` branch is for the type checker only
                    take(statement, in_function)
            else:
                take(child, in_function)

    def take(node: ast.AST, in_function: bool) -> None:
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(node, ast.Import):
            found.extend(Import(node.lineno, alias.name, inner) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node.module or "", node.level, package)
            if node.module is None or (PACKAGE.parent / target.replace(".", "/")).is_dir():
                # ``from . import x`` / ``from .pkg import x``: x may be a module of that package
                for alias in node.names:
                    candidate = f"{target}.{alias.name}"
                    found.append(Import(node.lineno, candidate if _is_module(candidate) else target, inner))
            else:
                found.append(Import(node.lineno, target, inner))
        elif isinstance(node, ast.Call) and (named := _import_module_call(node, module, package)):
            found.append(Import(node.lineno, named, inner))
        visit(node, inner)

    visit(ast.parse(source), False)
    return [found_import for found_import in found if found_import.target.split(".")[0] == "tracking_core"]


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYER_OF.get(parts[1]) if len(parts) > 1 else None


def _is_old_path(module: str) -> bool:
    """A top-level module path that is neither a foundation module nor a subpackage (an alias, or gone)."""
    parts = module.split(".")
    return len(parts) == 2 and parts[1] not in LAYER_OF and parts[1] not in FACE


def problems(
    source: str, module: str, is_package: bool = False, allowed: dict[tuple[str, str], str] | None = None
) -> tuple[list[str], set[tuple[str, str]]]:
    """What breaks the layering in ``module``, and the :data:`ALLOWED` entries it used."""
    allowed = ALLOWED if allowed is None else allowed
    layer = _layer(module)
    if layer is None or module in FACES:
        return [], set()
    found, used = [], set()
    for line, target, in_function in imports(source, module, is_package):
        where = f"{module}:{line}"
        if target == "tracking_core":
            found.append(f"{where} imports the package face `tracking_core` (import the module itself)")
        elif _is_old_path(target):
            found.append(f"{where} imports {target}, not a module of the layers (import the module itself)")
        elif (target_layer := _layer(target)) is not None and target_layer > layer:
            if in_function and (module, target) in allowed:
                used.add((module, target))
                continue
            how = "inside a function " if in_function else ""
            found.append(
                f"{where} imports {target} {how}from a layer above it ({LAYERS[target_layer]} > {LAYERS[layer]})"
            )
    return found, used


def _old_path_is_a_re_export(path: Path) -> bool:
    """Nothing but imports of the new module and ``sys.modules[__name__] = <it>``: an alias, no code of its own."""
    tree = ast.parse(path.read_text())
    body = [node for node in tree.body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    aliased = any(isinstance(node, ast.Assign) and "sys.modules[__name__]" in ast.unparse(node) for node in body)
    rest = [node for node in body if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign))]
    return aliased and not rest


def test_every_module_belongs_to_a_layer():
    # an alias module left at the top (see test_faces.py for which may still be there) is no layer's
    for path in PACKAGE.glob("*"):
        if path.name.startswith(("_", ".")) or path.name == "py.typed":
            continue
        assert path.stem in LAYER_OF or (path.suffix == ".py" and _old_path_is_a_re_export(path)), path


def test_layers_import_one_way():
    found: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        more, allowed = problems(path.read_text(), _module_name(path), _is_package(path))
        found += more
        used |= allowed
    assert not found, "\n".join(found)
    stale = [f"{entry}: {ALLOWED[entry]}" for entry in ALLOWED if entry not in used]
    assert not stale, "ALLOWED entries no longer needed (remove them):\n" + "\n".join(stale)


def test_an_upward_import_is_caught_wherever_it_is():
    engine = "tracking_core.delivery.engine"
    assert problems("from ..run.dispatcher import Dispatcher\n", engine)[0] == [
        f"{engine}:1 imports tracking_core.run.dispatcher from a layer above it (('run',) > ('delivery',))"
    ]
    lazy = "def later():\n    from ..run.dispatcher import Dispatcher\n"
    assert problems(lazy, engine)[0] == [
        f"{engine}:2 imports tracking_core.run.dispatcher inside a function from a layer above it "
        "(('run',) > ('delivery',))"
    ]
    by_name = "import importlib\ndef later():\n    return importlib.import_module('tracking_core.cli.show')\n"
    assert problems(by_name, engine)[0] == [
        f"{engine}:3 imports tracking_core.cli.show inside a function from a layer above it "
        "(('cli', 'transfer') > ('delivery',))"
    ]
    relative = "from importlib import import_module\nshow = import_module('..cli.show', __package__)\n"
    assert problems(relative, engine)[0] == [
        f"{engine}:2 imports tracking_core.cli.show from a layer above it (('cli', 'transfer') > ('delivery',))"
    ]
    assert problems("import tracking_core.old_name\n", "tracking_core.run.dispatcher")[0] == [
        "tracking_core.run.dispatcher:1 imports tracking_core.old_name, not a module of the layers "
        "(import the module itself)"
    ]
    checked_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..run.dispatcher import Dispatcher\n"
    assert problems(checked_only, engine) == ([], set())
    assert problems("from ..store.journal import read_journal\n", engine) == ([], set())


def test_an_allowed_upward_import_is_allowed_inside_a_function_only():
    engine, dispatcher = "tracking_core.delivery.engine", "tracking_core.run.dispatcher"
    allowed = {(engine, dispatcher): "a reason"}
    lazy = "def later():\n    from ..run.dispatcher import Dispatcher\n"
    assert problems(lazy, engine, allowed=allowed) == ([], {(engine, dispatcher)})
    eager = "from ..run.dispatcher import Dispatcher\n"
    assert problems(eager, engine, allowed=allowed)[0], "an allowlist entry never covers a module-level import"


def test_the_faces_are_the_only_modules_left_unchecked():
    # the faces are exempt; any other module of a layer is checked, its __init__ included
    assert problems("from ..run.dispatcher import Dispatcher\n", "tracking_core.kit", is_package=True) == ([], set())
    assert problems("from ..run.dispatcher import Dispatcher\n", "tracking_core.store", is_package=True)[0]
    assert problems("from .run.dispatcher import Dispatcher\n", "tracking_core", is_package=True) == ([], set())
