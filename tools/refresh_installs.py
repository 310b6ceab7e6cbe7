"""Reinstall this checkout's packages into Hatch environments kept from an earlier checkout.

Hatch installs the workspace's packages (editable) when it creates an environment and never again. An
environment kept between runs -- a developer's machine, a CI machine that reuses its environments -- keeps
the metadata of the pyproject.toml it was built from: entry points renamed since still point at the old
module, and the shared tests that compare them with the registry fail for a reason the code does not have.
Sources are linked, so code changes show; only metadata goes stale, and only when a pyproject.toml changes.

    python3 tools/refresh_installs.py ENVS_ROOT UV

ENVS_ROOT holds this project's Hatch environments (the parent of ``hatch env find test-core``). A stamp
there records the pyproject.toml files the environments were last brought up to; when they differ, every
editable install of a package of this checkout is reinstalled (``uv pip install --no-deps -e``), which
rewrites its metadata. Dependencies are Hatch's to sync, as it does on every ``hatch run``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

ROOT = Path(__file__).resolve().parent.parent
STAMP = ".tracking-pyprojects"


def pyprojects_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted([ROOT / "pyproject.toml", *ROOT.glob("packages/**/pyproject.toml")]):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def editable_sources(env: Path) -> list[Path]:
    """The folders of this checkout that ``env`` has installed editable, from each dist's direct_url.json."""
    sources = []
    for direct_url in env.glob("lib/python*/site-packages/*.dist-info/direct_url.json"):
        try:
            record = json.loads(direct_url.read_text())
        except (OSError, ValueError):
            continue
        url = record.get("url", "")
        if not (record.get("dir_info") or {}).get("editable") or not url.startswith("file://"):
            continue
        source = Path(unquote(urlparse(url).path))
        if source.is_relative_to(ROOT) and (source / "pyproject.toml").is_file():
            sources.append(source)
    return sorted(set(sources))


def refresh(envs_root: Path, uv: str) -> int:
    stamp = envs_root / STAMP
    fingerprint = pyprojects_fingerprint()
    if stamp.is_file() and stamp.read_text().strip() == fingerprint:
        return 0
    if not envs_root.is_dir():  # no environment yet: those Hatch builds from here on match this checkout
        envs_root.mkdir(parents=True, exist_ok=True)
        stamp.write_text(fingerprint + "\n")
        return 0
    failed = 0
    for env in sorted(path for path in envs_root.iterdir() if (path / "bin" / "python").exists()):
        sources = editable_sources(env)
        if not sources:
            continue
        print(
            f"== {env.name}: reinstalling {', '.join(s.relative_to(ROOT).as_posix() for s in sources)} "
            "(a pyproject.toml changed since the environment was built)",
            flush=True,
        )
        command = [uv, "pip", "install", "--quiet", "--no-deps", "--python", str(env / "bin" / "python")]
        for source in sources:
            command += ["-e", str(source)]
        if subprocess.run(command).returncode != 0:
            failed += 1
    if failed:
        print(f"could not reinstall into {failed} environment(s): `hatch env prune` rebuilds them", file=sys.stderr)
        return 1
    stamp.write_text(fingerprint + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(refresh(Path(sys.argv[1]), sys.argv[2]))
