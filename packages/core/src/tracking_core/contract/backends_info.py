"""What ``tracking list`` shows: per installed backend, its package, version and SDK status."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from .registry import _registered, installed_entry_points

#: Where each built-in backend writes with no account and no server.
EMBEDDED_DEFAULTS = {
    "jsonl": "journal.jsonl under <logging_dir>/<project>/<run>",
    "tensorboard": "event files in <logging_dir>/<project>/<run>",
    "mlflow": "sqlite:///<logging_dir>/mlflow.db",
    "aim": "Aim repo at <logging_dir>",
    "trackio": "Trackio store in <logging_dir>/trackio",
    "wandb": "offline run in <logging_dir>/wandb (wandb sync)",
    "comet_ml": "offline archive in <logging_dir>/<project>/<run>/comet_ml",
    "clearml": "offline session in <logging_dir>/clearml/offline",
    "swanlab": "offline run in <logging_dir>/swanlog (swanlab sync)",
    "dvclive": "DVCLive folder in <logging_dir>/<project>/<run>/dvclive (dvc plots show)",
}

#: The SDK module each built-in backend needs (None: no third-party SDK).
SDK_MODULES: dict[str, str | None] = {"jsonl": None}


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
