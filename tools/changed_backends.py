"""Which backend packages a change touches, as a JSON list for the CI matrix.

    python tools/changed_backends.py --base origin/main      # ["mlflow", "wandb"]

A change to one backend's folder selects that backend. A change to core, the shared tests, the tools,
the CI definition or the root configuration selects every backend, since each backend runs against
them. Documentation-only changes select nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_PREFIXES = ("packages/core/", "tests/", "tools/", ".github/", ".ci/", "pyproject.toml")


def all_backends(root: Path = ROOT) -> list[str]:
    return sorted(p.parent.name for p in (root / "packages").glob("*/pyproject.toml") if p.parent.name != "core")


def select(changed: list[str], backends: list[str]) -> list[str]:
    selected: set[str] = set()
    for path in changed:
        if path.endswith(".md") and not path.startswith(".github/"):
            continue
        if path.startswith(SHARED_PREFIXES):
            return backends
        parts = path.split("/")
        if len(parts) > 2 and parts[0] == "packages" and parts[1] in backends:
            selected.add(parts[1])
    return sorted(selected)


def changed_files(base: str) -> list[str]:
    output = subprocess.run(
        ["git", "diff", "--name-only", f"{base}...HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [line for line in output.splitlines() if line]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=None, help="git ref to diff against; without it, every backend")
    parser.add_argument("files", nargs="*", help="changed paths (instead of asking git)")
    args = parser.parse_args(argv)
    backends = all_backends()
    if args.files:
        chosen = select(args.files, backends)
    elif args.base:
        chosen = select(changed_files(args.base), backends)
    else:
        chosen = backends
    print(json.dumps(chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
