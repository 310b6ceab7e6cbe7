"""State lives with its owner: no module of ``tracking_core`` reads or writes another object's private attributes.

An object's ``_name`` is its own business; what its collaborators may use is public and documented on it
(``Dispatcher.state``, a ``RunState``; the ``Delivery``'s methods for its parts). Read from the source
(``ast``): every ``<something>._name`` where ``<something>`` is not ``self`` or ``cls`` counts, unless the
allowlist below names it with its reason.
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
}

#: attributes with a leading underscore that are public by their type's own definition
PUBLIC_BY_DEFINITION = frozenset({"_replace", "_asdict", "_fields", "_make"})  # namedtuple's API


def reaches(path: Path) -> list[tuple[int, str]]:
    """``(line, expression)`` of every private attribute of another object that ``path`` uses."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__") or name in PUBLIC_BY_DEFINITION:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append((node.lineno, f"{ast.unparse(node.value)}.{name}"))
    return found


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


def test_the_check_sees_a_reach(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f(run, self):\n    self._mine = 1\n    return run._theirs, run.state._replace()\n")
    assert reaches(sample) == [(3, "run._theirs")]
