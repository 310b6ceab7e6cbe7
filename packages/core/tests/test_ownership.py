"""State lives with its owner: no module of ``tracking_core`` reads or writes another object's private attributes.

An object's ``_name`` is its own business; what its collaborators may use is public and documented on it
(``Dispatcher.state``, a ``RunState``; the ``Delivery``'s methods for its parts). Read from the source
(``ast``): every ``<something>._name`` -- or ``getattr(<something>, "_name")`` and its kin -- where ``<something>``
is not ``self`` or ``cls`` counts, unless the allowlist below names it with its reason. The backend and
integration packages may use their SDK's or framework's private names, but never the core's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tracking_core

PACKAGE = Path(tracking_core.__file__).parent

#: ``(module, expression)``: why that one reach into another object's private attribute stays
ALLOWED: dict[tuple[str, str], str] = {
    ("notices.py", "sys._getframe"): "the warning points at the user's line: the interpreter's documented frame access",
    ("run/lifecycle.py", "threading._SHUTTING_DOWN"): (
        "finishing open runs at exit must start threads after the interpreter began shutting them down"
    ),
    ("run/rendezvous.py", "distributed_c10d._get_default_store"): (
        "the ranks' shared run id travels through torch.distributed's own store; torch has no public getter"
    ),
    ("kit/sdk.py", "tracker._wait_for_start"): (
        "the kit's SDK-object descriptor waits for the tracker's start-up, a contract hook not meant for users"
    ),
    ("run/lifecycle.py", "threading._register_atexit"): (
        "open runs finish before the interpreter joins its threads: the only hook that runs that early"
    ),
    ("run/lifecycle.py", "threading._threading_atexits"): "the same hook's list, to run first among them",
}
REPOSITORY = Path(__file__).resolve().parents[3]
#: what reaches name: an attribute, or the name given to getattr/hasattr/setattr/delattr
_BY_NAME = frozenset({"getattr", "hasattr", "setattr", "delattr"})

#: attributes with a leading underscore that are public by their type's own definition
PUBLIC_BY_DEFINITION = frozenset({"_replace", "_asdict", "_fields", "_make"})  # namedtuple's API


def reaches(path: Path) -> list[tuple[int, str]]:
    """``(line, expression)`` of every private attribute of another object that ``path`` uses."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            name, owner = node.attr, node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _BY_NAME
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            name, owner = node.args[1].value, node.args[0]
        else:
            continue
        if not name.startswith("_") or name.startswith("__") or name in PUBLIC_BY_DEFINITION:
            continue
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        found.append((node.lineno, f"{ast.unparse(owner)}.{name}"))
    return found


#: the core's objects that backends and integrations hold: the run, the tracker base class, the reports
HELD = {
    "run/dispatcher.py": "Dispatcher",
    "run/state.py": "RunState",
    "contract/tracker.py": "GeneralTracker",
    "report.py": "FinishReport",
}


def core_private_names() -> set[str]:
    """Every private name the objects other packages hold define (``self._name``, or ``def _name``)."""
    names = set()
    for module, class_name in HELD.items():
        tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
        (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name]
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                name = node.attr
            elif isinstance(node, (ast.FunctionDef, ast.AnnAssign)):
                name = node.name if isinstance(node, ast.FunctionDef) else ast.unparse(node.target)
            else:
                continue
            if name.startswith("_") and not name.startswith("__"):
                names.add(name)
    return names


def all_reaches() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for line, expression in reaches(path):
            found.setdefault((module, expression), []).append(line)
    return found


def test_no_module_reaches_into_another_objects_private_state():
    unexplained = {
        f"{module}:{lines[0]}: {expression}"
        for (module, expression), lines in all_reaches().items()
        if (module, expression) not in ALLOWED
    }
    assert not unexplained, (
        "private attributes of another object are used (make them part of the owner's documented interface, "
        "or add an entry with its reason to ALLOWED):\n" + "\n".join(sorted(unexplained))
    )


def test_every_allowlist_entry_is_still_needed():
    assert set(ALLOWED) <= set(all_reaches()), set(ALLOWED) - set(all_reaches())


def test_no_backend_or_integration_reaches_into_the_cores_private_state():
    """A private name of the core read by another package breaks silently when the core moves it (the Lightning
    integration once read the dispatcher's ``_finishing`` after it moved into the run's state)."""
    private = core_private_names()
    assert "_wait_for_start" in private  # the check knows the core's private names
    sources = [*REPOSITORY.glob("packages/*/src"), *REPOSITORY.glob("packages/integrations/*/src")]
    sources = [source for source in sources if source.parent.name != "core"]
    assert len(sources) >= 12, sources  # nine backends and the framework integrations
    found = [
        f"{path.relative_to(REPOSITORY)}:{line}: {expression}"
        for source in sources
        for path in sorted(source.rglob("*.py"))
        for line, expression in reaches(path)
        if expression.rpartition(".")[2] in private
    ]
    assert not found, "the core's private names used outside it (make them public on their owner):\n" + "\n".join(found)


def test_the_check_sees_a_reach(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(run, self):\n    self._mine = 1\n    return run._theirs, run.state._replace(), getattr(run, '_flag', 0)\n"
    )
    assert reaches(sample) == [(3, "run._theirs"), (3, "run._flag")]
