"""What ``tracking list`` shows: per installed backend, its package, version and SDK status."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from .builtins import BUILT_INS
from .registry import _registered, installed_entry_points

#: Where each built-in backend writes with no account and no server.
EMBEDDED_DEFAULTS = {row.name: row.embedded for row in BUILT_INS}

#: The SDK module each built-in backend needs (None: no third-party SDK).
SDK_MODULES: dict[str, str | None] = {row.name: row.sdk for row in BUILT_INS}


@dataclass
class BackendInfo:
    name: str
    package: str
    version: str
    sdk_status: str
    embedded: str


def _sdk_status(name: str) -> str:
    module = SDK_MODULES.get(name, name)
    if module is None:
        return "built in"
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return "missing"
    try:
        from importlib.metadata import version

        return f"yes ({version(module.replace('_', '-'))})"
    except Exception:
        return "yes"


def describe_backends() -> list[BackendInfo]:
    infos = []
    for name, entry in sorted(installed_entry_points().items()):
        dist = getattr(entry, "dist", None)
        infos.append(
            BackendInfo(
                name=name,
                package=dist.name if dist else "tracking-core",
                version=dist.version if dist else "-",
                sdk_status=_sdk_status(name),
                embedded=EMBEDDED_DEFAULTS.get(name, "-"),
            )
        )
    for name, cls in sorted(_registered.items()):
        infos.append(BackendInfo(name, f"registered: {cls.__module__}.{cls.__qualname__}", "-", "-", "-"))
    return infos
