"""Run context: the samplers, the sampling thread, the reproducibility capture and where they end up."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from tracking_core import init
from tracking_core.context import PARTS, context_parts, extras_of, repro, system_metrics_interval
from tracking_core.context.sampler import SamplerThread
from tracking_core.context.samples import read_samples
from tracking_core.context.system import GB, HostSampler, NvmlSampler, SystemSampler, job_devices
from tracking_core.store.journal import read_journal

# -- samplers ------------------------------------------------------------------------------------


@pytest.mark.skipif(not os.path.isfile("/proc/meminfo"), reason="Linux /proc")
def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def test_host_sampler_reads_this_process_and_host_from_proc(tmp_path):
    sampler = HostSampler(tmp_path)
    start = _cpu_seconds()
    while _cpu_seconds() - start < 0.03:  # CPU time the kernel has counted (in ticks), however loaded the machine
        sum(i * i for i in range(20_000))
    values = sampler.sample()
    rss_kb = int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmRSS")))
    assert values["memory.rss_gb"] == pytest.approx(rss_kb / 1024**2, rel=0.2)
    total = int(next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal"))) / 1024**2
    assert values["memory.used_gb"] + values["memory.available_gb"] == pytest.approx(total, rel=1e-6)
    assert values["cpu.percent"] > 0
    assert 0 <= values["cpu.host_percent"] <= 100
    assert values["disk.free_gb"] > 0
    for name in ("disk.read_mb_s", "disk.write_mb_s", "network.recv_mb_s", "network.sent_mb_s"):
        assert values[name] >= 0


def test_host_cpu_percent_is_the_busy_share_of_the_ticks_between_samples(tmp_path):
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "net").mkdir()
    (proc / "meminfo").write_text("MemTotal: 4194304 kB\nMemFree: 1 kB\nMemAvailable: 1048576 kB\n")
    (proc / "self" / "statm").write_text("100 256 0 0 0 0 0\n")
    (proc / "net" / "dev").write_text("h1\nh2\n  lo: 999 0 0 0 0 0 0 0 999 0\n eth0: 1000 0 0 0 0 0 0 0 2000 0\n")
    (proc / "stat").write_text("cpu  100 0 100 800 0 0 0 0\n")
    sampler = HostSampler(proc=str(proc))
    (proc / "stat").write_text("cpu  175 0 100 825 0 0 0 0\n")  # 100 ticks: 75 busy
    values = sampler.sample()
    assert values["cpu.host_percent"] == pytest.approx(75.0)
    assert values["memory.used_gb"] == pytest.approx(3.0)
    assert values["memory.available_gb"] == pytest.approx(1.0)
    assert values["memory.rss_gb"] == pytest.approx(256 * os.sysconf("SC_PAGE_SIZE") / GB)
    assert "network.recv_mb_s" in values  # loopback left out: only eth0's counters


class FakeNvml:
    """Stands in for ``pynvml`` (nvidia-ml-py): four GPUs, device i using i GB of 16."""

    def __init__(self) -> None:
        self.initialised = self.shut = False

    def nvmlInit(self):
        self.initialised = True

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return 4

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return int(uuid.rsplit("-", 1)[1])

    def nvmlDeviceGetName(self, handle):
        return b"Fake GPU"

    def nvmlDeviceGetUtilizationRates(self, handle):
        return SimpleNamespace(gpu=10 * handle)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(used=handle * GB, total=16 * GB)

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 40 + handle

    def nvmlDeviceGetPowerUsage(self, handle):
        raise RuntimeError("not supported")  # a board without a power sensor


def test_nvml_samples_only_the_jobs_devices_numbered_as_the_job_sees_them(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,GPU-x-3")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    nvml = FakeNvml()
    sampler = NvmlSampler(job_devices(), nvml)
    values = sampler.sample()
    assert values == {
        "gpu.0.utilization_percent": 20.0,
        "gpu.0.memory_used_gb": 2.0,
        "gpu.0.memory_total_gb": 16.0,
        "gpu.0.temperature_c": 42.0,
        "gpu.1.utilization_percent": 30.0,
        "gpu.1.memory_used_gb": 3.0,
        "gpu.1.memory_total_gb": 16.0,
        "gpu.1.temperature_c": 43.0,
    }
    assert sampler.names() == ["Fake GPU", "Fake GPU"]
    sampler.close()
    assert nvml.shut


def test_per_rank_samples_the_device_of_its_local_rank(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert job_devices(per_rank=True) == [(1, "5")]
    assert job_devices(per_rank=False) == [(0, "4"), (1, "5"), (2, "6")]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert job_devices(per_rank=True) == [(1, "1")]
    assert job_devices(per_rank=False) is None  # every device of the host


def test_system_sampler_names_everything_under_system(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    sampler = SystemSampler(tmp_path, nvml=FakeNvml())
    values = sampler.sample()
    assert all(key.startswith("system/") for key in values)
    assert values["system/gpu.3.memory_used_gb"] == 3.0
    if os.path.isfile("/proc/meminfo"):
        assert values["system/memory.rss_gb"] > 0


# -- the sampling thread -------------------------------------------------------------------------


def test_sampler_thread_samples_off_the_callers_thread_and_stops_with_a_last_sample():
    emitted: list[tuple[str, dict[str, float]]] = []

    class Counting:
        closed = False
        calls = 0

        def sample(self):
            Counting.calls += 1
            return {"system/n": float(Counting.calls)}

        def close(self):
            Counting.closed = True

    thread = SamplerThread(
        Counting, lambda values, when: emitted.append((threading.current_thread().name, values)), 0.01
    )
    thread.start()
    deadline = time.monotonic() + 10
    while len(emitted) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    thread.stop()
    assert not thread._thread.is_alive()
    names = {name for name, _ in emitted[:-1]}
    assert names == {"tracking-system-metrics"}
    assert Counting.closed
    count = len(emitted)
    time.sleep(0.05)
    assert len(emitted) == count  # nothing after stop
    assert thread.samples == count


def test_a_sampler_that_cannot_start_leaves_the_run_alone(caplog):
    def broken():
        raise OSError("no /proc")

    thread = SamplerThread(broken, lambda values, when: None, 0.01).start()
    thread.stop()
    assert "system metrics are off" in caplog.text


# -- options -------------------------------------------------------------------------------------


def test_options_and_environment(monkeypatch):
    monkeypatch.delenv("TRACKING_SYSTEM_METRICS", raising=False)
    monkeypatch.delenv("TRACKING_RUN_CONTEXT", raising=False)
    default = extras_of(None, None)
    # the default: both kept in the run folder, neither sent to a backend
    assert default.interval == 10.0 and not default.samples_to_backends
    assert default.parts == dict.fromkeys(PARTS, True) and not default.context_to_backends
    assert extras_of(True, True) == (10.0, True, dict.fromkeys(PARTS, True), True)
    assert extras_of(2, {"diff": False}) == (2.0, True, {**dict.fromkeys(PARTS, True), "diff": False}, True)
    assert extras_of(False, False) == (None, False, None, False)
    monkeypatch.setenv("TRACKING_SYSTEM_METRICS", "0")
    monkeypatch.setenv("TRACKING_RUN_CONTEXT", "0")
    assert extras_of(None, None) == (None, False, None, False)
    assert extras_of(True, True).samples_to_backends  # the code's option wins
    monkeypatch.setenv("TRACKING_SYSTEM_METRICS", "30")
    monkeypatch.setenv("TRACKING_RUN_CONTEXT", "on")
    assert extras_of(None, None) == (30.0, True, dict.fromkeys(PARTS, True), True)
    monkeypatch.setenv("TRACKING_SYSTEM_METRICS", "1")
    assert extras_of(None, None)[:2] == (10.0, True)
    for bad in ("x", -1, 0):
        with pytest.raises(ValueError):
            system_metrics_interval(bad)  # type: ignore[arg-type]
    monkeypatch.setenv("TRACKING_SYSTEM_METRICS", "often")
    with pytest.raises(ValueError, match="TRACKING_SYSTEM_METRICS"):
        extras_of(None, None)
    assert context_parts({"diff": False})["diff"] is False  # type: ignore[index]
    assert context_parts(False) is None
    with pytest.raises(ValueError, match="unknown part"):
        context_parts({"secrets": True})
    with pytest.raises(ValueError, match="system_metrics"):
        init("p", log_with=[], logging_dir=".", system_metrics="often")


# -- what reproduces the run ---------------------------------------------------------------------


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    _git(
        repo,
        "remote",
        "add",
        "origin",
        "https://someone:ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/org/proj.git",
    )
    (repo / "train.py").write_text("print('v1')\n")
    _git(repo, "add", "train.py")
    _git(repo, "commit", "-qm", "one")
    return repo


def test_capture_records_git_state_diff_and_untracked_names(repo, tmp_path):
    (repo / "train.py").write_text("print('v2')\n")
    (repo / "notes.txt").write_text("x")
    context = repro.capture(tmp_path / "run", start=repo)
    git = context["git"]
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert git["commit"] == head and git["branch"] == "main"
    assert git["remote_url"] == "https://github.com/org/proj.git"  # credentials stripped
    assert git["dirty"] is True and git["untracked"] == ["notes.txt"]
    diff = Path(git["diff"]).read_text()
    assert "-print('v1')" in diff and "+print('v2')" in diff
    assert "diff_cut" not in git and "notes" not in context


def test_a_50_mb_diff_is_cut_with_a_note(repo, tmp_path):
    (repo / "big.txt").write_text("a\n")
    _git(repo, "add", "big.txt")
    _git(repo, "commit", "-qm", "big")
    (repo / "big.txt").write_bytes(b"0123456789abcdef" * (50 * 1024 * 1024 // 16))
    context = repro.capture(tmp_path / "run", {"packages": False, "platform": False}, start=repo)
    assert Path(context["git"]["diff"]).stat().st_size == repro.DIFF_LIMIT
    assert "larger than 5 MB" in context["git"]["diff_cut"]
    assert any("diff.patch holds its start" in note for note in context["notes"])


def test_a_clean_checkout_has_no_diff_and_nothing_is_spawned_outside_one(repo, tmp_path, monkeypatch):
    context = repro.capture(tmp_path / "run", start=repo)
    assert context["git"]["dirty"] is False and "diff" not in context["git"]
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.setattr(repro.subprocess, "Popen", lambda *a, **k: pytest.fail("git was run outside a checkout"))
    assert "git" not in repro.capture(tmp_path / "run2", start=outside)


def _hanging_git(folder: Path, release: Path) -> None:
    folder.mkdir()
    script = folder / "git"
    script.write_text(f'#!/bin/sh\nwhile [ ! -e "{release}" ]; do sleep 0.02; done\nexit 1\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_a_hung_git_is_killed_at_the_timeout_and_the_rest_is_kept(repo, tmp_path, monkeypatch):
    _hanging_git(tmp_path / "bin", tmp_path / "never")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(repro, "GIT_TIMEOUT", 0.3)
    context = repro.capture(tmp_path / "run", {"packages": False}, start=repo)
    assert len(context["git"]["commit"]) == 40  # read from .git files, no process needed
    assert "dirty" not in context["git"]
    assert any("did not answer within 0.3 s" in note for note in context["notes"])
    assert context["platform"]["python"] == ".".join(map(str, sys.version_info[:3]))


def test_init_does_not_wait_for_git(repo, tmp_path, monkeypatch, memory):
    """The git stand-in answers only once a file exists, which this test creates after init returned."""
    release = tmp_path / "release"
    _hanging_git(tmp_path / "bin", release)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sys, "argv", [str(repo / "train.py")])
    run = init("p", log_with=["memory"], logging_dir=tmp_path / "logs", system_metrics=False)
    assert not release.exists()  # init returned while git was still blocked
    run.log({"loss": 1.0})
    release.touch()
    run.finish()
    context = json.loads((run.run_dir / "run.json").read_text())["context"]
    assert len(context["git"]["commit"]) == 40
    assert any("git status" in note for note in context["notes"])  # the stand-in failed


def test_command_line_and_launcher_variables_are_redacted_and_allow_listed(monkeypatch):
    argv = [
        "train.py",
        "--hub_token",
        "hf_abcdefghijklmnopqrstuvwx",
        "--api-key=k123",
        "--lr",
        "0.1",
        "--db=https://u:pw@h/x",
    ]
    assert repro.redact_argv(argv) == [
        "train.py", "--hub_token", "<redacted>", "--api-key=<redacted>", "--lr", "0.1", "--db=https://u:<redacted>@h/x"
    ]  # fmt: skip
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("MY_SECRET", "s")
    launcher = repro._launcher()
    assert launcher["SLURM_JOB_ID"] == "42" and launcher["WORLD_SIZE"] == "8"
    assert "MY_SECRET" not in launcher and "PATH" not in launcher and "HOME" not in launcher


# -- where it ends up ----------------------------------------------------------------------------


def test_by_default_samples_and_context_stay_in_the_run_folder(tmp_path, memory, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not a checkout: no git
    run = init("p", log_with=["memory", "jsonl"], logging_dir=tmp_path, config={"lr": 0.1})
    for step in range(3):
        run.log({"loss": float(step)})
    report = run.finish()
    tracker = memory.runs[-1]
    assert tracker.metrics == [(0, {"loss": 0.0}), (1, {"loss": 1.0}), (2, {"loss": 2.0})]
    assert tracker.config == {"lr": 0.1}
    assert report.backends["memory"].delivered == 4 and report.backends["jsonl"].delivered == 4
    context = json.loads((run.run_dir / "run.json").read_text())["context"]
    assert context["platform"]["python"] and context["command"]["argv"]
    assert "pytest==" in Path(context["packages"]).read_text()
    (sample,) = read_samples(run.run_dir)  # a run shorter than the interval: the last sample at finish
    assert sample["index"] == 0 and "system/memory.rss_gb" in sample["values"]
    entries = list(read_journal(run.run_dir / "journal.jsonl"))
    assert [e["values"] for e in entries if e["type"] == "metrics"] == [{"loss": float(s)} for s in range(3)]
    assert [e["values"] for e in entries if e["type"] == "config"] == [{"lr": 0.1}]
    assert "system samples" not in str(report) and "run context" not in str(report)


def test_a_backend_overriding_log_run_context_gets_it_when_the_run_asks(tmp_path, monkeypatch):
    from tracking_core.testing import MemoryTracker

    class Native(MemoryTracker):
        name = "native"
        contexts: list[dict] = []

        def log_run_context(self, context):
            Native.contexts.append(context)

    monkeypatch.chdir(tmp_path)
    run = init("p", log_with=[Native()], logging_dir=tmp_path, system_metrics=False)
    run.finish()
    assert Native.contexts == []  # not asked
    run = init("p", log_with=[Native(), MemoryTracker()], logging_dir=tmp_path, system_metrics=False, context=True)
    report = run.finish()
    (context,) = Native.contexts
    assert context["format"] == "tracking-run-context"
    assert context == json.loads((run.run_dir / "run.json").read_text())["context"]
    assert [tracker.config for tracker in MemoryTracker.runs[-2:]] == [None, None]  # never as config
    assert report.backends["native"].context_delivered is True and report.backends["native"].delivered == 0
    assert report.backends["memory"].context_delivered is None  # it does not declare it takes the context
    assert "native: run context: stored" in str(report)


def test_everything_off_starts_no_thread(tmp_path, memory):
    run = init("p", log_with=["memory"], logging_dir=tmp_path, system_metrics=False, context=False)
    assert run.state.context_capture is None
    run.finish()
    assert memory.runs[-1].config is None


RANK_SCRIPT = r"""
import json, sys, time
from tracking_core import init

run = init("job", log_with=["jsonl"], logging_dir=sys.argv[1], per_rank=sys.argv[2] == "per-rank",
           system_metrics=0.05, context={"packages": False})
for step in range(3):
    run.log({"loss": float(step)})
    time.sleep(0.05)
run.finish()
print(json.dumps({"run_dir": str(run.run_dir) if run.trackers else None}))
"""


@pytest.mark.parametrize("mode", ["per-rank", "one-run"])
def test_every_rank_samples_into_its_run_or_rank_0_for_the_job(tmp_path, mode):
    from tracking_core.testing.ranks import launch_ranks

    results = launch_ranks(
        RANK_SCRIPT, str(tmp_path), mode, world=2, port=29531 if mode == "per-rank" else 29532, cwd=tmp_path
    )
    run_dirs = [result["run_dir"] for result in results]
    if mode == "one-run":
        assert run_dirs[1] is None  # rank 1 runs no tracker, so it samples nothing
        run_dirs = run_dirs[:1]
    for rank, run_dir in enumerate(run_dirs):
        assert read_samples(run_dir) and "system/memory.rss_gb" in read_samples(run_dir)[0]["values"]
        context = json.loads((Path(run_dir) / "run.json").read_text())["context"]
        assert context["launcher"]["RANK"] == str(rank)
        entries = list(read_journal(Path(run_dir) / "journal.jsonl"))
        assert not any(key.startswith("system/") for e in entries if e["type"] == "metrics" for key in e["values"])


def test_torch_memory_is_read_only_from_a_torch_the_script_imported(monkeypatch):
    from tracking_core.context.system import TorchMemorySampler

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    sampler = TorchMemorySampler([(0, "3")])
    assert sampler.sample() == {}  # not imported: nothing read, nothing imported
    assert "torch" not in sys.modules
    cuda = SimpleNamespace(
        is_initialized=lambda: True,
        is_available=lambda: True,
        device_count=lambda: 1,
        memory_allocated=lambda index: 2 * GB,
        memory_reserved=lambda index: 3 * GB,
    )
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    assert sampler.sample() == {"gpu.0.torch_allocated_gb": 2.0, "gpu.0.torch_reserved_gb": 3.0}


def test_a_notebook_is_the_entry_point_and_its_checkout_is_found(repo, tmp_path, monkeypatch):
    """In Jupyter, ``__main__`` has no file and ``sys.argv[0]`` is the kernel launcher; the server names the notebook."""
    (repo / "explore.ipynb").write_text("{}")
    monkeypatch.setitem(sys.modules, "__main__", SimpleNamespace(__name__="__main__"))
    monkeypatch.setattr(sys, "argv", [sys.executable, "-f", "kernel.json"])
    monkeypatch.setenv("JPY_SESSION_NAME", str(repo / "explore.ipynb"))
    monkeypatch.chdir(tmp_path)  # a kernel's cwd need not be the notebook's folder
    context = repro.capture(tmp_path / "run", {"packages": False})
    assert context["command"]["entry_point"] == str(repo / "explore.ipynb")
    assert context["git"]["root"] == str(repo) and len(context["git"]["commit"]) == 40


def test_without_proc_psutil_gives_the_same_names(monkeypatch, tmp_path):
    counters = SimpleNamespace(bytes_recv=0, bytes_sent=0)

    class Process:
        def memory_info(self):
            return SimpleNamespace(rss=GB)

        def io_counters(self):
            return SimpleNamespace(read_bytes=0, write_bytes=0)

    psutil = SimpleNamespace(
        Process=Process,
        Error=Exception,
        cpu_percent=lambda interval=None: 25.0,
        virtual_memory=lambda: SimpleNamespace(total=8 * GB, available=2 * GB),
        net_io_counters=lambda: counters,
    )
    monkeypatch.setitem(sys.modules, "psutil", psutil)
    sampler = HostSampler(tmp_path, proc=str(tmp_path / "no-proc"))
    counters.bytes_recv = 1024**2
    values = sampler.sample()
    assert values["cpu.host_percent"] == 25.0
    assert values["memory.rss_gb"] == 1.0 and values["memory.used_gb"] == 6.0 and values["memory.available_gb"] == 2.0
    assert values["network.recv_mb_s"] > 0 and "disk.read_mb_s" in values and "cpu.percent" in values


def test_the_package_list_read_from_folder_names_is_what_importlib_metadata_reports():
    import re
    from importlib.metadata import distributions

    from tracking_core.context.repro import installed_packages

    reported: dict[str, str] = {}
    for distribution in distributions():  # first on sys.path first, as importing does
        name = distribution.metadata["Name"]
        reported.setdefault(re.sub(r"[-_.]+", "-", name).lower(), distribution.version)
    assert installed_packages() == reported
    assert "pytest" in reported


def test_a_replay_into_a_new_run_sends_the_context_only_where_the_original_did(tmp_path, monkeypatch):
    from tracking_core import register_tracker_class
    from tracking_core.cli.replay import replay
    from tracking_core.testing import MemoryTracker

    class Native(MemoryTracker):
        name = "native-context"
        contexts: list[dict] = []

        def log_run_context(self, context):
            Native.contexts.append(context)

    register_tracker_class(Native)
    monkeypatch.chdir(tmp_path)
    for asked in (False, True):
        Native.contexts.clear()
        run = init(
            "p", logging_dir=tmp_path / str(asked), config={"lr": 0.1}, system_metrics=False, context=asked or None
        )
        run.log({"loss": 1.0}, step=0)
        run.finish()
        copy = replay(
            run.run_dir, "native-context", logging_dir=tmp_path / f"copy-{asked}", progress=False, new_run=True
        )
        assert copy.ok, str(copy)
        original = json.loads((run.run_dir / "run.json").read_text())["context"]
        assert Native.contexts == ([original] if asked else [])
        assert MemoryTracker.runs[-1].config == {"lr": 0.1}  # never as config beside it
