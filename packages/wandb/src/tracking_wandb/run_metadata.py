"""The run context in W&B's run metadata: what a run's *Overview* shows (git, command, host, Python, ...).

W&B fills that metadata itself from the process and, unless ``disable_git``, from ``git`` processes;
this backend keeps both off (no process at start-up) and sends the context ``tracking_core`` captured
instead, once it arrives (a moment after ``wandb.init``), as one metadata message. W&B has no public
call for metadata after ``init`` (its ``Settings(git_commit=...)`` are read only by ``wandb.init``,
before the context exists), so the message goes through the run's interface to ``wandb-core``,
feature-detected; a release without it costs one warning, and the context stays in the config.

Two generations of that message:

* **0.21 and later** -- an ``EnvironmentRecord`` (``interface.publish_environment``): written to the
  ``.wandb`` file; ``wandb sync`` merges a run's records into its ``wandb-metadata.json``. W&B's own
  record is turned off (``x_disable_meta``), so this one is the whole metadata: the command line is the
  redacted one, and it is not listed twice (merging records appends their argument lists).
* **0.19.10 to 0.20** -- a ``MetadataRequest`` marked as the user's (``interface.publish_metadata``):
  ``wandb-core`` merges it over the metadata it wrote at start (``files/wandb-metadata.json``, which
  ``wandb sync`` uploads). W&B's own arguments stay there (``sys.argv``, not redacted); this message
  leaves them alone rather than list them twice.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: the message kinds, newest first: (proto message, interface method)
ENVIRONMENT = ("EnvironmentRecord", "publish_environment")
METADATA = ("MetadataRequest", "publish_metadata")


def generation() -> tuple[str, str] | None:
    """Which metadata message the installed W&B takes after ``init`` (:data:`ENVIRONMENT`, :data:`METADATA`), if any."""
    try:
        from wandb.proto import wandb_internal_pb2 as pb
        from wandb.sdk.interface.interface import InterfaceBase
    except ImportError:
        return None
    for message, method in (ENVIRONMENT, METADATA):
        if hasattr(pb, message) and callable(getattr(InterfaceBase, method, None)):
            return message, method
    return None


def _relative(path: str | None, folder: str | None) -> str | None:
    if not path or not folder or path.startswith("<"):
        return None
    try:
        relative = os.path.relpath(path, folder)
    except ValueError:  # another drive
        return None
    return None if relative.startswith("..") else relative


def metadata_fields(context: dict[str, Any], with_args: bool = True) -> dict[str, Any]:
    """The context as W&B's metadata fields (the names of its proto messages); missing parts left out."""
    git = context.get("git") or {}
    command = context.get("command") or {}
    system = context.get("platform") or {}
    entry = command.get("entry_point")
    program = f"-m {command['module']}" if command.get("module") else entry
    fields: dict[str, Any] = {
        "program": program,
        "code_path": _relative(entry, git.get("root")) or _relative(entry, command.get("cwd")),
        "code_path_local": _relative(entry, command.get("cwd")),
        "root": command.get("cwd"),
        "executable": command.get("python"),
        "host": system.get("host"),
        "os": system.get("platform"),
        "python": " ".join(part for part in (system.get("implementation"), system.get("python")) if part) or None,
        "cpu_count_logical": system.get("cpu_count"),
        "gpu_type": (system.get("gpus") or [None])[0],
        "gpu_count": len(system["gpus"]) if system.get("gpus") else None,
        "cuda_version": system.get("cuda"),
        "started_at": context.get("captured"),
    }
    if with_args and command.get("argv"):
        fields["args"] = list(command["argv"][1:])
    if git.get("commit") or git.get("remote_url"):
        fields["git"] = {"commit": git.get("commit"), "remote_url": git.get("remote_url")}
    slurm = {
        name[len("SLURM_") :].lower(): str(value)
        for name, value in (context.get("launcher") or {}).items()
        if name.startswith("SLURM_")
    }
    if slurm:
        fields["slurm"] = slurm
    return {name: value for name, value in fields.items() if value not in (None, "", [])}


def build_message(message: str, fields: dict[str, Any]) -> Any:
    """``fields`` on a new proto ``message``; a field that release does not have is left out."""
    from wandb.proto import wandb_internal_pb2 as pb

    built = getattr(pb, message)()
    known = built.DESCRIPTOR.fields_by_name
    for name, value in fields.items():
        if name not in known:
            continue
        if name == "git":
            for part, text in value.items():
                if text:
                    setattr(built.git, part, text)
        elif name == "args":
            built.args.extend(value)
        elif name == "slurm":
            built.slurm.update(value)
        elif name == "started_at":
            built.started_at.FromNanoseconds(int(float(value) * 1e9))
        else:
            setattr(built, name, value)
    if "_user_modified" in known:  # 0.19-0.20: merged over W&B's own metadata, not under it
        built._user_modified = True
    return built


def interface_of(run: Any) -> Any:
    """The run's channel to ``wandb-core``: ``run._interface`` (newer releases) or ``run._backend.interface``."""
    found = getattr(run, "_interface", None)
    if found is None:
        found = getattr(getattr(run, "_backend", None), "interface", None)
    if found is None:
        raise AttributeError("the W&B run has no interface to wandb-core")
    return found


def publish(run: Any, kind: tuple[str, str], fields: dict[str, Any]) -> None:
    """Send ``fields`` as the metadata message ``kind``; raises when the SDK refuses it."""
    message, method = kind
    getattr(interface_of(run), method)(build_message(message, fields))


def read_metadata(run_dir: str | os.PathLike[str]) -> Any | None:
    """An offline run's metadata as ``wandb sync`` uploads it, as W&B's own proto message (``None``: none).

    0.21 and later: the ``environment`` records of the run's ``.wandb`` file, merged in order;
    earlier: ``files/wandb-metadata.json``, which ``wandb-core`` rewrites at each metadata message.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    from .reader import find_log
    from .transaction_log import iter_records

    if hasattr(pb, ENVIRONMENT[0]):
        merged = pb.EnvironmentRecord()
        found = False
        for record in iter_records(find_log(Path(run_dir))):
            if record.WhichOneof("record_type") == "environment":
                merged.MergeFrom(record.environment)
                found = True
        return merged if found else None
    from google.protobuf import json_format  # type: ignore[import-untyped]  # wandb's own dependency

    path = Path(run_dir) / "files" / "wandb-metadata.json"
    if not path.is_file():
        return None
    return json_format.Parse(path.read_text(encoding="utf-8"), pb.MetadataRequest(), ignore_unknown_fields=True)
