"""A real `mlflow server` on 127.0.0.1 (sqlite store in a test folder) that tests start, kill and restart.

Its store starts as the migrated empty store the backend copies for a new embedded store
(``tracking_mlflow.schema_cache``): the server then opens a store at MLflow's newest revision instead of
running every migration in its own start-up, as it does over a store a run of this library made.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class MlflowServer:
    """One server process (and its workers, in their own process group) over a store that outlives it."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder = folder
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / "server.log"
        self.store = folder / "server.db"
        self._process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> str:
        from tracking_mlflow.schema_cache import seed_store

        seed_store(self.store)  # when there is no store yet (and the cache is on); MLflow migrates it otherwise
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        env.update(MLFLOW_DISABLE_TELEMETRY="true", MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false")  # no huey workers
        command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--workers", "1", "--backend-store-uri", f"sqlite:///{self.store}"]
        command += ["--artifacts-destination", str(self.folder / "served")]
        with open(self.log_path, "a") as log:
            self._process = subprocess.Popen(
                command, cwd=self.folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("mlflow server did not come up:\n" + self.log_path.read_text()[-3000:])
            time.sleep(0.3)
        return self.url

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def ensure_answering(self, timeout: float = 60) -> None:
        """Thaw a server an earlier test left frozen, or start one it left dead or stopped."""
        if self._process is not None and self._process.poll() is None:
            self.thaw()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if self.answers():
                    return
                time.sleep(0.3)
        self.stop()
        self.start(timeout)

    def kill(self) -> None:
        """SIGKILL the server and its workers, as a crash or an OOM kill would."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        self._signal(signal.SIGTERM)

    def freeze(self) -> None:
        """SIGSTOP the server: connections are accepted and never answered, as with a hung host."""
        assert self._process is not None
        os.killpg(self._process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        assert self._process is not None
        try:
            os.killpg(self._process.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass

    def _signal(self, number: int) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            os.killpg(process.pid, number)  # the server's own process group (it forks workers)
        except ProcessLookupError:
            pass
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
