"""The run context as Aim's own ``__system_params`` (what ``log_system_params`` records, shown on the run page)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def system_params(context: dict[str, Any]) -> dict[str, Any]:
    """Git info, executable, arguments, launcher variables and packages in ``__system_params``'s layout."""
    git = context.get("git") or {}
    command = context.get("command") or {}
    packages: dict[str, str] = {}
    if context.get("packages"):
        try:
            for line in Path(context["packages"]).read_text(encoding="utf-8").splitlines():
                name, _, version = line.partition("==")
                packages[name] = version
        except OSError:
            pass
    return {
        "packages": packages,
        "env_variables": dict(context.get("launcher") or {}),
        "git_info": {
            "branch": git.get("branch"),
            "remote_origin_url": git.get("remote_url"),
            "commit": {"hash": git.get("commit")},
            "dirty": git.get("dirty"),
        }
        if git
        else {},
        "executable": command.get("python"),
        "arguments": list(command.get("argv") or []),
    }
