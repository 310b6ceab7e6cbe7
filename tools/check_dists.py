"""Build every package's sdist and wheel and check what a package index would receive.

    hatch run dist:check                  # build into a temporary folder, check, clean up
    hatch run dist:check --dist-dir dist  # check already-built files (and keep them)

``uv build`` makes the sdist first and the wheel from the sdist, as an installer would, so a file missing
from the sdist breaks the wheel too. Per package, the check wants: the LICENSE (identical to the
repository's) in the sdist and in the wheel's ``.dist-info/licenses``; ``py.typed`` in the wheel; the
metadata a user reads on the index (licence expression, authors, project URLs, Python version
classifiers that agree with ``Requires-Python``); a README that renders and has no relative links
(they point nowhere on an index page). ``twine check --strict`` then validates every file.
"""

from __future__ import annotations

import argparse
import email.parser
import re
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LICENSE_EXPRESSION = "Apache-2.0"
REQUIRED_URLS = ("Homepage", "Repository", "Issues", "Changelog")
REPOSITORY = "https://github.com/tracking-dev/tracking"
#: Every distribution: core and the backends at packages/<name>, framework integrations one level down.
PACKAGE_GLOBS = ("packages/*/pyproject.toml", "packages/integrations/*/pyproject.toml")

_INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)")  # [text](target) and ![alt](target)
_REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_HTML_LINK = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def relative_links(markdown: str) -> list[str]:
    """Link and image targets that only resolve next to the source file (``../../README.md``, ``docs/x.png``)."""
    text = _FENCE.sub("", markdown)
    targets = [*_INLINE_LINK.findall(text), *_REFERENCE_LINK.findall(text), *_HTML_LINK.findall(text)]
    return [t for t in targets if not re.match(r"(https?://|mailto:|#)", t)]


def _python_versions(requires_python: str) -> list[str]:
    """``>=3.10`` -> the minor versions this repository supports from there (3.10 ... 3.13)."""
    floor = re.fullmatch(r"\s*>=\s*3\.(\d+)\s*", requires_python or "")
    return [f"3.{minor}" for minor in range(int(floor.group(1)) if floor else 10, 14)]


def metadata_problems(metadata: str, folder: str) -> list[str]:
    """What is missing or inconsistent in a wheel's METADATA / an sdist's PKG-INFO."""
    message = email.parser.Parser().parsestr(metadata)
    problems = []
    if message.get("License-Expression") != LICENSE_EXPRESSION:
        problems.append(f"License-Expression is {message.get('License-Expression')!r}, not {LICENSE_EXPRESSION!r}")
    if "LICENSE" not in (message.get_all("License-File") or []):
        problems.append("no License-File: LICENSE")
    if not (message.get("Author") or message.get("Author-email")):
        problems.append("no author")
    urls = dict(line.split(", ", 1) for line in message.get_all("Project-URL") or [] if ", " in line)
    problems += [f"no project URL {name!r}" for name in REQUIRED_URLS if name not in urls]
    problems += [
        f"project URL {name} = {url} is not under {REPOSITORY}"
        for name, url in urls.items()
        if not url.startswith(REPOSITORY)
    ]
    classifiers = message.get_all("Classifier") or []
    claimed = sorted(
        c.rsplit(" :: ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    if not claimed:
        problems.append("no Python version classifiers")
    elif claimed[0] != _python_versions(message.get("Requires-Python", ""))[0]:
        problems.append(f"Requires-Python {message.get('Requires-Python')} but the oldest classifier is {claimed[0]}")
    if "Typing :: Typed" not in classifiers:
        problems.append("no 'Typing :: Typed' classifier")
    if message.get("Description-Content-Type") != "text/markdown":
        problems.append(f"Description-Content-Type is {message.get('Description-Content-Type')!r}")
    readme = message.get_payload()
    if len(readme) < 1000:
        problems.append(f"README is {len(readme)} characters: too short to stand alone on a package index")
    if REPOSITORY not in readme:
        problems.append(f"README does not link the repository ({REPOSITORY})")
    problems += [
        f"README links {target!r}, which is relative: use an absolute URL" for target in relative_links(readme)
    ]
    if folder != "core" and "tracking-core" not in " ".join(message.get_all("Requires-Dist") or []):
        problems.append("does not depend on tracking-core")
    return problems


def _render_problem(readme: str) -> str | None:
    """The README as the index renders it (GitHub-flavoured markdown); None when it renders."""
    import readme_renderer.markdown  # the dist environment has it (with cmarkgfm, without which nothing renders)

    return None if readme_renderer.markdown.render(readme) else "the README does not render as markdown"


def check_package(folder: Path, dist_dir: Path, license_text: bytes) -> list[str]:
    project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    stem = re.sub(r"[-_.]+", "_", project["name"]).lower()
    wheels = sorted(dist_dir.glob(f"{stem}-*-py3-none-any.whl"))
    sdists = sorted(dist_dir.glob(f"{stem}-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        return [f"expected one wheel and one sdist named {stem}-*, found {[p.name for p in wheels + sdists]}"]
    problems = []
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        licence = f"{dist_info}/licenses/LICENSE"
        if licence not in names:
            problems.append(f"wheel: no {licence}")
        elif wheel.read(licence) != license_text:
            problems.append("wheel: LICENSE differs from the repository's")
        if not any(n.endswith("/py.typed") for n in names):
            problems.append("wheel: no py.typed")
        metadata = wheel.read(f"{dist_info}/METADATA").decode("utf-8")
    with tarfile.open(sdists[0]) as sdist:
        base = sdist.getnames()[0].split("/")[0]
        members = set(sdist.getnames())
        for required in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"):
            if f"{base}/{required}" not in members:
                problems.append(f"sdist: no {required}")
        if f"{base}/LICENSE" in members and sdist.extractfile(f"{base}/LICENSE").read() != license_text:
            problems.append("sdist: LICENSE differs from the repository's")
        pkg_info = sdist.extractfile(f"{base}/PKG-INFO").read().decode("utf-8")
    problems += [f"wheel METADATA: {p}" for p in metadata_problems(metadata, folder.name)]
    if email.parser.Parser().parsestr(pkg_info).get_payload() != email.parser.Parser().parsestr(metadata).get_payload():
        problems.append("the sdist's README differs from the wheel's")
    rendering = _render_problem(email.parser.Parser().parsestr(metadata).get_payload())
    return problems + ([rendering] if rendering else [])


def package_folders(root: Path = ROOT) -> list[Path]:
    """Every distribution's folder: core, the backends and the framework integrations."""
    return sorted(project.parent for pattern in PACKAGE_GLOBS for project in root.glob(pattern))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist-dir", type=Path, help="check the files already built there (default: build them now)")
    parser.add_argument(
        "--only", action="append", metavar="FOLDER", help="check this package folder only (packages/mlflow); repeatable"
    )
    args = parser.parse_args(argv)
    folders = package_folders()
    if args.only:
        wanted = {(ROOT / folder).resolve() for folder in args.only}
        folders = [folder for folder in folders if folder.resolve() in wanted]
        if len(folders) != len(wanted):
            parser.error(f"--only names a folder that is not a package: {args.only}")
    license_text = (ROOT / "LICENSE").read_bytes()
    with tempfile.TemporaryDirectory() as scratch:
        dist_dir = args.dist_dir or Path(scratch)
        if args.dist_dir is None:
            build = [sys.executable, "-m", "uv", "build", "--all-packages", "--quiet", "--out-dir", str(dist_dir)]
            if subprocess.run(build, cwd=ROOT).returncode:
                print("check_dists: the build failed", file=sys.stderr)
                return 1
        failed = False
        for folder in folders:
            problems = check_package(folder, dist_dir, license_text)
            failed |= bool(problems)
            print(f"{folder.relative_to(ROOT)}: " + ("ok" if not problems else "\n  " + "\n  ".join(problems)))
        files = sorted(str(p) for p in dist_dir.iterdir() if p.suffix in (".whl", ".gz"))
        twine = subprocess.run(
            [sys.executable, "-m", "twine", "check", "--strict", *files], capture_output=True, text=True
        )
        if twine.returncode:
            print(twine.stdout + twine.stderr)
            failed = True
        else:
            print(f"twine check --strict: {len(files)} files passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
