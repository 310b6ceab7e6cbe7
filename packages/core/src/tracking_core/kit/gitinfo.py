"""The git commit and branch a run's code came from, read from ``.git`` files without running ``git``.

SDKs that ask ``git`` at start-up (GitPython's ``git version``, ``git rev-parse``) spawn a process per
call, wait on it, and hang with it on a slow network filesystem. The commit a checkout is at is two
small files away: ``HEAD``, then the ref it names (loose, or in ``packed-refs``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple


class GitHead(NamedTuple):
    root: Path
    commit: str
    branch: str | None


def _git_dir(start: Path) -> tuple[Path, Path] | None:
    """(work tree root, git dir) of the checkout holding ``start``; worktrees' ``.git`` files followed."""
    for folder in (start, *start.parents):
        marker = folder / ".git"
        if marker.is_dir():
            return folder, marker
        if marker.is_file():
            text = marker.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                target = Path(text[len("gitdir:") :].strip())
                return folder, target if target.is_absolute() else (folder / target).resolve()
    return None


def _common_dir(git_dir: Path) -> Path:
    """Where refs live: a linked worktree keeps only HEAD in its own folder."""
    common = git_dir / "commondir"
    if common.is_file():
        target = Path(common.read_text(encoding="utf-8").strip())
        return target if target.is_absolute() else (git_dir / target).resolve()
    return git_dir


def _ref(common: Path, ref: str) -> str | None:
    loose = common / ref
    if loose.is_file():
        return loose.read_text(encoding="utf-8").strip() or None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8", errors="replace").splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref:
                return sha
    return None


def read_head(start: str | os.PathLike[str] | None = None) -> GitHead | None:
    """The checkout's HEAD commit and branch (``None`` when detached); ``None`` outside a checkout.

    ``start`` defaults to the folder of the script being run (``sys.argv[0]``), else the working directory.
    """
    if start is None:
        script = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c", "-m") else ""
        start = Path(script).resolve().parent if script and Path(script).exists() else Path.cwd()
    try:
        found = _git_dir(Path(start).resolve())
        if found is None:
            return None
        root, git_dir = found
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if head.startswith("ref:"):
            ref = head[len("ref:") :].strip()
            commit = _ref(_common_dir(git_dir), ref)
            branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None
        else:
            commit, branch = head, None
    except (OSError, ValueError):
        return None
    if not commit or len(commit) < 40:
        return None
    return GitHead(root, commit, branch)
