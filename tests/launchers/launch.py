"""Start the processes of one job the way a launcher would, with a deadline: a rank that hangs is killed.

Each process (a launcher agent such as torchrun, or one rank of a simulated ``srun``/``mpirun``) runs in a
session of its own, so on timeout ``os.killpg`` ends it with everything it started (the agent's workers,
an SDK's helper processes). A job never outlives its test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

TRAIN = Path(__file__).with_name("train.py")
BIN = Path(sys.executable).parent

#: Variables of the test process that would tell a child which rank it is, or send its data elsewhere.
_INHERITED_NOT = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "OMPI_MCA_ess_base_jobid",
    "PMIX_NAMESPACE",
    "TORCHELASTIC_RUN_ID",
    "TRACKING_RUN_ID",
    "MLFLOW_TRACKING_URI",
    "MLFLOW_EXPERIMENT_NAME",
    "WANDB_SERVICE",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _INHERITED_NOT}
    env.update(
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",  # two CPUs shared by up to four ranks
        MLFLOW_DISABLE_TELEMETRY="true",
        HF_HUB_OFFLINE="1",
        TORCHELASTIC_ERROR_FILE="",
    )
    env.update(extra)
    return env


@dataclass
class Process:
    command: list[str]
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    killed: bool = False  # still running at the deadline: a hang

    def summaries(self) -> list[dict]:
        """The JSON objects ``train.py`` printed at its end (one per rank this process ran).

        A launcher that relays its ranks' output can join two ranks' lines into one, so every
        object is read wherever it starts.
        """
        decoder, found = json.JSONDecoder(), []
        start = self.stdout.find('{"rank"')
        while start != -1:
            summary, end = decoder.raw_decode(self.stdout, start)
            found.append(summary)
            start = self.stdout.find('{"rank"', end)
        return found


@dataclass
class Job:
    processes: list[Process]
    seconds: float
    deadline: float
    extra: dict = field(default_factory=dict)

    @property
    def hung(self) -> bool:
        return any(process.killed for process in self.processes)

    @property
    def summaries(self) -> dict[int, dict]:
        return {summary["rank"]: summary for process in self.processes for summary in process.summaries()}

    def output(self) -> str:
        return "\n".join(f"$ {' '.join(p.command)}\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}" for p in self.processes)


def run_job(commands: list[tuple[list[str], dict[str, str]]], cwd: Path, timeout: float) -> Job:
    """Start every ``(command, env)`` at once and wait for all of them, at most ``timeout`` seconds in total."""
    started = time.monotonic()
    logs = []
    popens = []
    for index, (command, env) in enumerate(commands):
        out, err = open(cwd / f"process-{index}.out", "w+"), open(cwd / f"process-{index}.err", "w+")
        logs.append((out, err))
        popens.append(
            subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err, text=True, start_new_session=True)
        )
    processes = [Process(command) for command, _env in commands]
    for popen, process in zip(popens, processes):
        remaining = max(0.1, timeout - (time.monotonic() - started))
        try:
            popen.wait(remaining)
        except subprocess.TimeoutExpired:
            process.killed = True
            _kill_group(popen)
        process.returncode = popen.returncode
    for (out, err), process in zip(logs, processes):
        out.seek(0)
        err.seek(0)
        process.stdout, process.stderr = out.read(), err.read()
        out.close()
        err.close()
    return Job(processes, time.monotonic() - started, timeout)


def _kill_group(popen: subprocess.Popen) -> None:
    try:
        os.killpg(popen.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    popen.wait(10)


def train_args(
    logging_dir: Path, backends: str, steps: int, per_rank: bool, crash: tuple[int, int] | None
) -> list[str]:
    args = ["--logging-dir", str(logging_dir), "--backends", backends, "--steps", str(steps)]
    if per_rank:
        args.append("--per-rank")
    if crash is not None:
        args += ["--crash-rank", str(crash[0]), "--crash-step", str(crash[1])]
    return args


def torchrun(nproc: int, nnodes: int, args: list[str]) -> list[tuple[list[str], dict[str, str]]]:
    """``torchrun --nproc_per_node N`` (one agent), or ``--nnodes 2`` as two agents on this machine."""
    endpoint = f"127.0.0.1:{free_port()}"
    commands = []
    for node_rank in range(nnodes):
        command = [str(BIN / "torchrun"), "--nnodes", str(nnodes), "--nproc_per_node", str(nproc)]
        command += ["--rdzv_backend", "c10d", "--rdzv_endpoint", endpoint, "--rdzv_id", "launch-test"]
        command += ["--node_rank", str(node_rank), "--monitor_interval", "0.2", "--max_restarts", "0"]
        command += [str(TRAIN), "--launcher", "torchrun", *args]
        commands.append((command, clean_env()))
    return commands


def accelerate_launch(nproc: int, args: list[str], cwd: Path) -> list[tuple[list[str], dict[str, str]]]:
    """``accelerate launch`` with several CPU processes: its multi-process launcher, CPU forced in the script."""
    command = [str(BIN / "accelerate"), "launch", "--multi_gpu", "--num_processes", str(nproc)]
    command += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    command += ["--main_process_port", str(free_port()), str(TRAIN), "--launcher", "accelerate", *args]
    return [(command, clean_env(HF_HOME=str(cwd / "hf")))]  # no accelerate config of the machine is read


def simulated(launcher: str, world: int, args: list[str]) -> list[tuple[list[str], dict[str, str]]]:
    """What ``srun -n N`` or ``mpirun -np N`` would start: N processes differing only in their rank variables."""
    names = {
        "slurm": ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID"),
        "mpi": ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid"),
    }
    rank_name, size_name, job_name = names[launcher]
    port = str(free_port())
    job = {job_name: port, "TEST_MASTER_PORT": port}  # the launcher's job id tells this job from another
    return [
        (
            [sys.executable, str(TRAIN), "--launcher", launcher, *args],
            clean_env(**{rank_name: str(rank), size_name: str(world), **job}),
        )
        for rank in range(world)
    ]
