"""Every command `bash tools/run.sh demo` prints at its end runs as printed, through the same script.

The demo runs in the Hatch environment `all`; its follow-up lines (`tracking show`, the backends' viewers,
the install hint for MLflow's UI) are typed after `bash tools/run.sh run`. Each one is run here that way:
the one-shot commands to their exit status, the viewers until they answer on their port.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HATCH = Path(os.environ.get("TRACKING_TOOLS_VENV", Path.home() / ".cache/tracking-dev/hatch-venv"), "bin/hatch")

pytestmark = pytest.mark.skipif(
    not HATCH.is_file(), reason="needs tools/run.sh's Hatch (bash tools/run.sh installs it)"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(port: int, process: subprocess.Popen[bytes], attempts: int = 240) -> bool:
    """Polls the port every half second, ``attempts`` times at most, while the viewer is alive."""
    for _ in range(attempts):
        if process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.5)
    return False


def _serves(command: str, port: int) -> None:
    process = subprocess.Popen(
        command, shell=True, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert _answers(port, process), f"{command!r} did not answer on port {port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _runs(command: str) -> None:
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])


def test_every_follow_up_command_the_demo_prints_runs_as_printed(tmp_path):
    demo = subprocess.run(
        ["bash", "tools/run.sh", "demo", "--steps", "3", "--logging-dir", str(tmp_path / "runs"),
         "--backends", "jsonl,mlflow,trackio,tensorboard,dvclive"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    output = demo.stdout.split("\nnext:\n", 1)[1]
    prefix = "bash tools/run.sh run"
    assert f"(run its viewer through: {prefix} ...)" in output, output

    commands = [line.strip().split("    #", 1)[0] for line in output.splitlines() if line.startswith(f"  {prefix} ")]
    assert len(commands) == 3, output
    for command in commands:  # tracking show / runs / replay
        _runs(command)

    views = {line.split(":", 1)[0].strip(): line for line in output.splitlines() if line.startswith("  ")}
    summary = re.search(r"summary: (.+)\)$", views["jsonl"])
    assert summary, views["jsonl"]
    _runs(f"{prefix} {summary[1]}")
    _runs(f"{prefix} {views['dvclive'].split('view with: ', 1)[1]}")

    port = _free_port()
    _serves(f"{prefix} {views['tensorboard'].split('view with: ', 1)[1]} --port {port}", port)
    # trackio show takes no port option: Gradio's variable picks where its scan starts
    trackio = re.search(r"\(view: (.+)\)$", views["trackio"])
    assert trackio and trackio[1].startswith("TRACKIO_DIR="), views["trackio"]
    port = _free_port()
    _serves(f"{prefix} GRADIO_SERVER_PORT={port} {trackio[1]}", port)

    mlflow = re.search(
        r"view it with: (mlflow ui [^(]+?)(?: \(`mlflow ui` comes with full mlflow: (.+)\))?$", views["mlflow"]
    )
    assert mlflow, views["mlflow"]
    if mlflow[2] is None:  # full mlflow is installed: its UI starts
        port = _free_port()
        _serves(f"{prefix} {mlflow[1]} --port {port}", port)
        return
    # the install hint: full mlflow at exactly the installed mlflow-skinny's version, into the demo's environment
    skinny = subprocess.run(
        [prefix.split()[0], *prefix.split()[1:], "python", "-c",
         "import importlib.metadata as m; print(m.version('mlflow-skinny'))"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    ).stdout.strip()  # fmt: skip
    assert shlex.split(mlflow[2]) == ["pip", "install", f"mlflow=={skinny}"], mlflow[2]
    # A dry run, without dependencies: a package index may lag behind mlflow's own pins (mlflow-tracing)
    resolved = subprocess.run(
        f"{prefix} pip install --dry-run --no-deps {shlex.quote(f'mlflow=={skinny}')}",
        shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resolved.returncode == 0, resolved.stderr
    assert (
        "environment at: "
        + subprocess.run(
            [*prefix.split(), "python", "-c", "import sys; print(sys.prefix)"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        in resolved.stdout + resolved.stderr
    ), resolved.stderr
    assert f"mlflow=={skinny}" in resolved.stdout + resolved.stderr, resolved.stderr
