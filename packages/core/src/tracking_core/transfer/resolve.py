"""Name a run the way a person does: its folder, its journal, its run id or ``project/run``."""

from __future__ import annotations

import os
from pathlib import Path

from ..store.journal import JOURNAL_NAME

__all__ = ["resolve_run"]


def resolve_run(name: str | os.PathLike[str], logging_dir: str | os.PathLike[str] = "runs") -> Path:
    """The journal file ``name`` designates.

    Tried in order: a path to a run folder or journal file; ``project/run`` under ``logging_dir``; a run
    id (or the unique start of one) in any project under ``logging_dir``.
    """
    path = Path(name)
    if path.is_file():
        return path
    if (path / JOURNAL_NAME).is_file():
        return path / JOURNAL_NAME
    root = Path(logging_dir)
    text = str(name)
    if (root / text / JOURNAL_NAME).is_file():
        return root / text / JOURNAL_NAME
    if "/" not in text and "\\" not in text and root.is_dir():
        exact = sorted(root.glob(f"*/{text}/{JOURNAL_NAME}"))
        matches = exact or sorted(
            journal for journal in root.glob(f"*/*/{JOURNAL_NAME}") if journal.parent.name.startswith(text)
        )
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            found = ", ".join(f"{m.parent.parent.name}/{m.parent.name}" for m in matches[:6])
            raise ValueError(f"run {text!r} is ambiguous under {root}: {found}; name it as project/run")
    raise FileNotFoundError(
        f"no run {text!r}: not a run folder or journal, nor a run id or project/run under {root} (--logging-dir)"
    )
