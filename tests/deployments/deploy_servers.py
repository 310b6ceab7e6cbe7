"""The servers of a team's deployment, as processes a test starts, kills and restarts: PostgreSQL (initdb and
pg_ctl in a folder of its own), `mlflow server` on it, and Aim's remote tracking server (`aim server`).

The commands come from the worked examples of docs/distributed.md (:func:`doc_commands`): the bash block
under a heading, with the example's folder and ports replaced by the test's. So the docs print what the
tests run.
"""

from __future__ import annotations

import glob
import importlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"
#: What the worked examples name, replaced by a test's own folder and ports.
DOC_FOLDER = "/srv/tracking"
PG_PROGRAMS = ("initdb", "pg_ctl", "createdb")


def unavailable(reason: str) -> NoReturn:
    """Skip for ``reason``, or fail where the deployments are required (CI installs what they need)."""
    if os.environ.get("TRACKING_DEPLOYMENTS") == "required":
        pytest.fail(f"TRACKING_DEPLOYMENTS=required: {reason}", pytrace=False)
    pytest.skip(reason)


def require_module(name: str, reason: str) -> None:
    try:
        importlib.import_module(name)
    except ImportError:
        unavailable(reason)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def doc_commands(heading: str) -> list[list[str]]:
    """The commands of the bash block under ``### heading`` in docs/distributed.md, each split as the
    shell splits it (comments and ``pip install`` lines left out: the test environment has the packages)."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"### {re.escape(heading)}\n.*?```bash\n(.*?)```", text, re.S)
    assert match, f"docs/distributed.md has no bash block under {heading!r}"
    commands = []
    for line in match.group(1).replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[:2] != ["pip", "install"]:
            commands.append(words)
    return commands


def doc_init_call(heading: str) -> str:
    """The ``tracking_core.init(...)`` call of the python block under ``### heading`` in docs/distributed.md."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"### {re.escape(heading)}\n.*?```python\n(.*?)```", text, re.S)
    assert match, f"docs/distributed.md has no python block under {heading!r}"
    call = re.search(r"^run = (tracking_core\.init\(.*?^\))$", match.group(1), re.S | re.M)
    assert call, f"the python block under {heading!r} has no `run = tracking_core.init(...)`"
    return call.group(1)


def substitute(words: list[str], replacements: dict[str, str]) -> list[str]:
    out = []
    for word in words:
        for old, new in replacements.items():
            word = word.replace(old, new)
        out.append(word)
    return out


def postgres_bin() -> Path | None:
    """The folder of PostgreSQL's server programs: on PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(versions[-1]).parent if versions else None


class Postgres:
    """A PostgreSQL cluster in a folder of its own on 127.0.0.1, made by the commands of the worked example.

    initdb refuses to run as root: as root the cluster belongs to the ``postgres`` user (Debian's package
    makes it) and every PostgreSQL program runs as that user (``runuser``); otherwise as the caller.
    """

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        # a folder the postgres user can reach (pytest's tmp_path is private to root)
        self.folder = Path(tempfile.mkdtemp(prefix="tracking-pg-"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.start_words: list[str] = []  # the example's `pg_ctl ... start`, run again by start()
        self.data: Path | None = None

    def run(self, words: list[str], timeout: float = 120) -> None:
        """One PostgreSQL command, the program taken from :attr:`bin_dir`."""
        command = [*self.as_user, str(self.bin_dir / words[0]), *words[1:]]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=self.folder)
        if done.returncode != 0:
            logs = "".join(log.read_text(errors="replace")[-3000:] for log in self.folder.glob("*.log"))
            raise RuntimeError(f"{shlex.join(command)} failed:\n{done.stdout}{done.stderr}{logs}")
        if words[0] == "pg_ctl" and "start" in words:
            self.start_words = words
            self.data = Path(words[words.index("-D") + 1])

    def start(self) -> None:
        """The worked example's ``pg_ctl ... start`` again (after :meth:`stop_immediately`)."""
        self.run(self.start_words)

    def stop_immediately(self) -> None:
        """``pg_ctl stop -m immediate``: every server process quits at once, as in a crash (recovery at start)."""
        assert self.data is not None
        self.run(["pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop"])

    def cleanup(self) -> None:
        if self.data is not None and (self.data / "postmaster.pid").exists():
            try:
                self.stop_immediately()
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(self.folder, ignore_errors=True)


class ServerProcess:
    """A long-running server (`mlflow server`, `aim server`) in its own process group, so that a SIGKILL ends
    it and every worker it forked, as a crash or an OOM kill of the host's service would."""

    def __init__(self, command: list[str], cwd: Path, log_path: Path, answers: Callable[[], bool]) -> None:
        self.command = command
        self.cwd = cwd
        self.log_path = log_path
        self.answers = answers
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 180) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "__AIM"))}
        env.update(MLFLOW_DISABLE_TELEMETRY="true", MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false")
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                self.command, cwd=self.cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"{shlex.join(self.command)} did not come up:\n" + self.log_tail())
            time.sleep(0.3)

    def log_tail(self, size: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-size:] if self.log_path.exists() else ""

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        self._signal(signal.SIGTERM)

    def _signal(self, number: int) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        try:
            os.killpg(process.pid, number)
        except ProcessLookupError:
            pass
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(15)


def http_answers(url: str) -> Callable[[], bool]:
    def answers() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    return answers


def console_command(words: list[str]) -> list[str]:
    """``mlflow ...`` / ``aim ...`` as this environment's console script (the one beside its python)."""
    script = Path(sys.executable).parent / words[0]
    return [str(script) if script.exists() else words[0], *words[1:]]


MLFLOW_EXAMPLE = "MLflow server on PostgreSQL"
AIM_EXAMPLE = "Aim's remote tracking server"


class MlflowDeployment:
    """The worked example "MLflow server on PostgreSQL": its commands, on free ports, in a fresh folder."""

    def __init__(self, bin_dir: Path, logs: Path) -> None:
        self.postgres = Postgres(bin_dir)
        self.logs = logs
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.replacements = {DOC_FOLDER: str(self.postgres.folder), "5432": str(free_port()), "5000": str(self.port)}
        self.server: ServerProcess | None = None
        self.artifacts = self.postgres.folder / "mlartifacts"  # the example's --artifacts-destination

    def start(self) -> None:
        for words in doc_commands(MLFLOW_EXAMPLE):
            words = substitute(words, self.replacements)
            if words[0] in PG_PROGRAMS:
                self.postgres.run(words)
            elif words[:2] == ["mlflow", "server"]:
                assert str(self.artifacts) in words, "the example's artifacts go to <folder>/mlartifacts"
                self.server = ServerProcess(
                    console_command(words),
                    self.logs,
                    self.logs / "mlflow-server.log",
                    http_answers(f"{self.url}/health"),
                )
                self.server.start(timeout=300)  # the first start creates MLflow's tables in PostgreSQL
            else:
                raise AssertionError(f"a command the test does not know how to run: {shlex.join(words)}")
        assert self.server is not None, "the example starts no `mlflow server`"

    def init_call(self) -> str:
        return doc_init_call(MLFLOW_EXAMPLE).replace("127.0.0.1:5000", f"127.0.0.1:{self.port}")

    def cleanup(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.postgres.cleanup()


class AimDeployment:
    """The worked example "Aim's remote tracking server": its commands, on a free port, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.repo = folder / "aim"
        self.replacements = {DOC_FOLDER: str(folder), "53800": str(self.port)}
        self.server: ServerProcess | None = None

    def start(self) -> None:
        for words in doc_commands(AIM_EXAMPLE):
            words = substitute(words, self.replacements)
            if words[:2] == ["aim", "server"]:
                self.server = ServerProcess(
                    console_command(words),
                    self.folder,
                    self.folder / "aim-server.log",
                    http_answers(f"http://127.0.0.1:{self.port}/status/"),
                )
                self.server.start(timeout=180)
            elif words[:2] == ["mkdir", "-p"]:
                Path(words[2]).mkdir(parents=True, exist_ok=True)
            elif words[0] == "aim":
                done = subprocess.run(console_command(words), capture_output=True, text=True, timeout=120)
                assert done.returncode == 0, done.stdout + done.stderr
            else:
                raise AssertionError(f"a command the test does not know how to run: {shlex.join(words)}")
        assert self.server is not None, "the example starts no `aim server`"

    def init_call(self) -> str:
        return doc_init_call(AIM_EXAMPLE).replace("127.0.0.1:53800", f"127.0.0.1:{self.port}")

    def cleanup(self) -> None:
        if self.server is not None:
            self.server.stop()
