"""What reproduces a run: the code's git state, the command, the platform, the packages, the launcher.

:func:`capture` returns one JSON-able dict (``docs/run-context.md`` shows it) and writes the two
files too big for a dict, the uncommitted diff and the package list, into ``<run dir>/context/``.
It runs in its own thread (see :mod:`tracking_core.context`): ``git`` is a process that a huge
repository, a slow file system or a credential prompt can hold for minutes, so every call has a
timeout, its output is read up to a bound, and the caller never waits for it.

``git`` is run only when the script's folder (or the working directory) is inside a git work tree,
found by reading ``.git`` files (:mod:`tracking_core.kit.gitinfo`); outside one nothing is spawned. The
commit, branch and remote come from those files, so they are known even when ``git`` is missing or
hangs; ``git status`` (dirty flag, untracked names) and ``git diff HEAD`` add the rest.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..intake.redaction import REDACTED, is_secret_key, redact_text
from ..kit.gitinfo import _common_dir, _git_dir, read_head
from . import FORMAT, PARTS

#: the uncommitted diff is cut here (a note says so)
DIFF_LIMIT = 5 * 1024 * 1024
#: each git call is killed after this many seconds
GIT_TIMEOUT = 10.0
UNTRACKED_LIMIT = 1000
#: Launcher variables worth keeping; the rest of the environment never leaves the process.
LAUNCHER_VARIABLES = (
    "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "MASTER_ADDR",
    "MASTER_PORT", "TORCHELASTIC_RUN_ID", "CUDA_VISIBLE_DEVICES", "ACCELERATE_MIXED_PRECISION",
    "SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_PROCID",
    "SLURM_LOCALID", "SLURM_NNODES", "SLURM_NTASKS", "SLURM_JOB_PARTITION", "SLURM_CLUSTER_NAME",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK", "PBS_JOBID", "LSB_JOBID",
    "KUBERNETES_SERVICE_HOST", "JOB_COMPLETION_INDEX",
)  # fmt: skip


def capture(
    run_dir: Path,
    parts: Mapping[str, bool] | None = None,
    *,
    start: str | os.PathLike[str] | None = None,
    gpu_names: list[str] | None = None,
) -> dict[str, Any]:
    """The run's context; each part in ``parts`` set to ``False`` is left out. Never raises."""
    wanted = {part: True for part in PARTS} | dict(parts or {})
    context: dict[str, Any] = {"format": FORMAT, "captured": time.time()}
    notes: list[str] = []
    folder = Path(run_dir) / "context"
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("git", lambda: _git(start, folder, wanted["diff"], notes)),
        ("command", _command),
        ("platform", lambda: _platform(gpu_names)),
        ("packages", lambda: _packages(folder)),
        ("launcher", _launcher),
    ]
    for part, step in steps:
        if not wanted.get(part):
            continue
        try:
            value = step()
        except Exception as error:  # one part failing costs that part
            notes.append(f"{part}: not captured ({type(error).__name__}: {error})")
            continue
        if value is not None:
            context[part] = value
    if notes:
        context["notes"] = notes
    return context


# -- git ---------------------------------------------------------------------------------------
def strip_credentials(url: str) -> str:
    """A remote URL without the user and password an https remote may carry (``git@host:...`` kept)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    if parts.scheme and parts.netloc and "@" in parts.netloc:
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit(parts._replace(netloc=host))
    return redact_text(url)


def _remote_url(git_dir: Path) -> str | None:
    """``remote.origin.url`` (else the first remote's) from the repository's ``config`` file."""
    config = _common_dir(git_dir) / "config"
    if not config.is_file():
        return None
    remotes: dict[str, str] = {}
    section = None
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        header = re.fullmatch(r'\[remote\s+"([^"]+)"\]', line)
        if header:
            section = header.group(1)
        elif line.startswith("["):
            section = None
        elif section is not None and re.match(r"url\s*=", line):
            remotes.setdefault(section, line.split("=", 1)[1].strip())
    url = remotes.get("origin") or next(iter(remotes.values()), None)
    return strip_credentials(url) if url else None


def _git_environment() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_OPTIONAL_LOCKS": "0",  # status must not take the index lock the user's own git may want
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "LC_ALL": "C",
    }


def run_git(root: Path, args: list[str], limit: int, timeout: float) -> tuple[bytes, bool]:
    """``git args`` in ``root``: (stdout up to ``limit`` bytes, whether it was cut). Raises on timeout."""
    process = subprocess.Popen(
        ["git", "-C", str(root), "--no-pager", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_git_environment(),
    )
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    cut = False
    import selectors

    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"git {args[0]} did not answer within {timeout:g} s")
                if not selector.select(left):
                    continue
                chunk = os.read(process.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    cut = True
                    break
        if not cut:
            process.wait(max(0.1, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
    if not cut and process.returncode != 0:
        raise RuntimeError(f"git {args[0]} exited with {process.returncode}")
    return b"".join(chunks)[:limit], cut


def _git(
    start: str | os.PathLike[str] | None, folder: Path, with_diff: bool, notes: list[str]
) -> dict[str, Any] | None:
    head = read_head(code_folder() if start is None else start)
    if head is None:
        return None
    found = _git_dir(head.root)
    info: dict[str, Any] = {"root": str(head.root), "commit": head.commit, "branch": head.branch}
    if found is not None:
        info["remote_url"] = _remote_url(found[1])
    try:
        status, _ = run_git(
            head.root, ["status", "--porcelain=v1", "-z", "--untracked-files=normal"], 1 << 24, GIT_TIMEOUT
        )
    except (OSError, TimeoutError, RuntimeError) as error:
        notes.append(f"git status: {error}")
        return info
    entries = [entry for entry in status.decode("utf-8", "replace").split("\0") if entry]
    untracked = [entry[3:] for entry in entries if entry.startswith("?? ")]
    info["dirty"] = any(not entry.startswith("?? ") for entry in entries)
    info["untracked"] = untracked[:UNTRACKED_LIMIT]
    if len(untracked) > UNTRACKED_LIMIT:
        notes.append(f"git: {len(untracked)} untracked files, the first {UNTRACKED_LIMIT} listed")
    if with_diff and info["dirty"]:
        try:
            diff, cut = run_git(head.root, ["diff", "HEAD", "--no-color", "--no-ext-diff"], DIFF_LIMIT, GIT_TIMEOUT)
        except (OSError, TimeoutError, RuntimeError) as error:
            notes.append(f"git diff: {error}")
            return info
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "diff.patch"
        path.write_bytes(redact_text(diff.decode("utf-8", "replace")).encode("utf-8"))
        info["diff"] = str(path)
        if cut:
            note = f"the uncommitted diff is larger than {DIFF_LIMIT / 1024 / 1024:g} MB; diff.patch holds its start"
            info["diff_cut"] = note
            notes.append(f"git: {note}")
    return info


# -- command, platform, packages, launcher ------------------------------------------------------
def redact_argv(argv: list[str]) -> list[str]:
    """The command line with secrets out: credential-shaped text, and the value of a secret-named option."""
    clean: list[str] = []
    hide_next = False
    for argument in argv:
        if hide_next:
            clean.append(REDACTED)
            hide_next = False
            continue
        if argument.startswith("-"):
            name, equals, _ = argument.partition("=")
            if is_secret_key(name.lstrip("-")):
                if equals:
                    clean.append(f"{name}={REDACTED}")
                else:
                    clean.append(argument)
                    hide_next = True
                continue
        clean.append(redact_text(argument))
    return clean


def entry_point() -> str | None:
    """The script (or module) being run; in a notebook, the notebook when the kernel says which."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path:
        return str(os.path.abspath(path))
    notebook = getattr(main, "__vsc_ipynb_file__", None) or os.environ.get("JPY_SESSION_NAME")
    if notebook:
        return str(notebook)
    if "ipykernel" in sys.modules or "IPython" in sys.modules:
        return "<notebook>"
    return None


def code_folder() -> Path:
    """Where the code being run lives: a notebook's folder, the script's, else the working directory.

    In a notebook ``sys.argv[0]`` is the kernel launcher, inside site-packages: the notebook's own
    path (when the kernel says it) comes first there.
    """
    main = sys.modules.get("__main__")
    if not getattr(main, "__file__", None):
        entry = entry_point()
        if entry and not entry.startswith("<") and Path(entry).exists():
            return Path(entry).resolve().parent
    script = sys.argv[0] if sys.argv else ""
    if script and script not in ("-c", "-m") and Path(script).is_file():
        return Path(script).resolve().parent
    return Path.cwd()


def _command() -> dict[str, Any]:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return {
        "argv": redact_argv([str(argument) for argument in sys.argv]),
        "entry_point": entry_point(),
        "module": getattr(spec, "name", None),
        "cwd": os.getcwd(),
        "python": sys.executable,
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(("model name", "Hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine() or None  # not platform.processor(): on Linux it runs `uname -p`


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return str(version(distribution))
    except PackageNotFoundError:
        return None


def _platform(gpu_names: list[str] | None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
    }
    if gpu_names:
        info["gpus"] = gpu_names
    torch = sys.modules.get("torch")  # never imported here: read from the script's own import, else metadata
    if torch is not None:
        info["torch"] = str(getattr(torch, "__version__", None))
        info["cuda"] = getattr(getattr(torch, "version", None), "cuda", None)
        cuda = getattr(torch, "cuda", None)
        if not gpu_names and cuda is not None and cuda.is_available() and cuda.is_initialized():
            info["gpus"] = [cuda.get_device_name(index) for index in range(cuda.device_count())]
    else:
        version = _version("torch")
        if version:
            info["torch"] = version
    return {key: value for key, value in info.items() if value is not None}


def installed_packages() -> dict[str, str]:
    """``{normalised name: version}`` of what ``sys.path`` can import, as ``importlib.metadata`` finds it.

    Read from the ``<name>-<version>.dist-info`` (or ``.egg-info``) folder names, first on ``sys.path``
    first, instead of parsing every package's METADATA: the same list in about 0.5 ms rather than
    ~150 ms of the interpreter's lock that the training thread would wait for.
    """
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            listing = os.scandir(entry or ".")
        except OSError:
            continue
        with listing:
            for item in listing:
                stem, dot, suffix = item.name.rpartition(".")
                if not dot or suffix not in ("dist-info", "egg-info"):
                    continue
                name, _, rest = stem.partition("-")
                version = rest.partition("-")[0]  # an egg-info may end in -py3.x
                key = re.sub(r"[-_.]+", "-", name).lower()
                if name and version and key not in found:
                    found[key] = version
    return found


def _packages(folder: Path) -> str:
    lines = {f"{name}=={version}" for name, version in installed_packages().items()}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "packages.txt"
    path.write_text("".join(f"{line}\n" for line in sorted(lines, key=str.lower)), encoding="utf-8")
    return str(path)


def _launcher() -> dict[str, str]:
    return {name: redact_text(os.environ[name]) for name in LAUNCHER_VARIABLES if name in os.environ}
