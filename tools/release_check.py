"""Map a release tag to its package folder and refuse a tag whose version differs from the package's.

python tools/release_check.py tracking-comet-ml-v0.2.0    # prints folder=packages/comet_ml
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def folder_for(tag: str) -> tuple[Path, str]:
    match = re.fullmatch(r"(tracking-[a-z0-9-]+)-v(\d+\.\d+\.\d+\S*)", tag)
    if not match:
        raise SystemExit(f"tag {tag!r} is not tracking-<package>-v<version>")
    distribution, version = match.groups()
    # core and the backends at packages/<name>, framework integrations at packages/integrations/<framework>
    projects = [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("packages/integrations/*/pyproject.toml")]
    for project in projects:
        data = tomllib.loads(project.read_text())
        if data["project"]["name"] == distribution:
            return project.parent, version
    raise SystemExit(f"no package named {distribution}")


def package_version(folder: Path) -> str:
    data = tomllib.loads((folder / "pyproject.toml").read_text())
    about = ROOT / folder / data["tool"]["hatch"]["version"]["path"]
    return re.search(r'__version__\s*=\s*"([^"]+)"', about.read_text()).group(1)


def main(tag: str) -> int:
    folder, version = folder_for(tag)
    actual = package_version(folder)
    if actual != version:
        raise SystemExit(f"{tag}: the package says {actual}")
    print(f"folder={folder.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
