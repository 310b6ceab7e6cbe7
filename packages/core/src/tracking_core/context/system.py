"""System metrics: one sample of this process, its host and the GPUs of this job, under one schema.

Every name starts with ``system/`` and is the same on every backend (docs/run-context.md lists them):

* ``system/cpu.percent`` (this process, 100 = one core busy), ``system/cpu.host_percent`` (all cores, 0-100);
* ``system/memory.rss_gb`` (this process), ``system/memory.used_gb`` / ``system/memory.available_gb`` (host);
* ``system/disk.read_mb_s`` / ``system/disk.write_mb_s`` (this process), ``system/disk.free_gb`` (the
  file system of ``logging_dir``);
* ``system/network.recv_mb_s`` / ``system/network.sent_mb_s`` (host, loopback left out);
* per GPU of this job, numbered as the job sees them (``CUDA_VISIBLE_DEVICES`` order):
  ``system/gpu.<i>.utilization_percent``, ``.memory_used_gb``, ``.memory_total_gb``, ``.temperature_c``,
  ``.power_w`` (NVML), ``.torch_allocated_gb``, ``.torch_reserved_gb`` (torch, when it is imported).

Sources: Linux ``/proc`` without any package; ``psutil`` elsewhere when it is installed; NVIDIA GPUs
through NVML (the ``pynvml`` module of the optional ``nvidia-ml-py`` package); torch's own memory
statistics only when the script imported torch already (this module never imports it). No tool is
run: no ``nvidia-smi``, no ``lscpu``. A source that fails is dropped for the rest of the run.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from typing import Any

GB = 1024**3
MB = 1024**2
PREFIX = "system/"


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as handle:
        return handle.read()


class _Rates:
    """Per-second rates of counters that only grow: ``None`` at the first reading."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, float]] = {}

    def rate(self, name: str, value: float, now: float) -> float | None:
        last = self._last.get(name)
        self._last[name] = (value, now)
        if last is None or now <= last[1]:
            return None
        return max(0.0, (value - last[0]) / (now - last[1]))


class HostSampler:
    """CPU, memory, disk and network of this process and its host: ``/proc`` on Linux, else psutil."""

    def __init__(self, disk_path: str | os.PathLike[str] | None = None, proc: str = "/proc") -> None:
        self.disk_path = os.fspath(disk_path) if disk_path is not None else None
        self.proc = proc
        self.use_proc = os.path.isfile(os.path.join(proc, "meminfo"))
        self._psutil: Any = None
        if not self.use_proc:
            try:
                import psutil  # type: ignore[import-untyped,unused-ignore]

                self._psutil = psutil
                self._process = psutil.Process()
            except ImportError:
                pass
        self._rates = _Rates()
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self.sample()  # the counters' first reading: rates start at the next sample

    @property
    def available(self) -> bool:
        return self.use_proc or self._psutil is not None

    def sample(self) -> dict[str, float]:
        now = time.monotonic()
        values: dict[str, float] = {}
        times = os.times()
        self._put_rate(values, "cpu.percent", (times.user + times.system) * 100.0, now)
        for part in (self._proc_sample, self._psutil_sample):
            try:
                part(values, now)
            except Exception:  # one unreadable file costs its values, not the others
                pass
        if self.disk_path is not None:
            try:
                values["disk.free_gb"] = shutil.disk_usage(self.disk_path).free / GB
            except OSError:
                pass
        return values

    def _put_rate(self, values: dict[str, float], name: str, counter: float, now: float, scale: float = 1.0) -> None:
        rate = self._rates.rate(name, counter, now)
        if rate is not None:
            values[name] = rate / scale

    def _proc_sample(self, values: dict[str, float], now: float) -> None:
        if not self.use_proc:
            return
        proc = self.proc
        cpu = _read(f"{proc}/stat").split("\n", 1)[0].split()[1:]
        ticks = [float(field) for field in cpu]
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0.0)
        busy_rate = self._rates.rate("cpu.busy", sum(ticks) - idle, now)
        total_rate = self._rates.rate("cpu.total", sum(ticks), now)
        if busy_rate is not None and total_rate:
            # two rates of the same interval: rounding (and iowait, which the kernel may count backwards) can
            # put their ratio a hair outside 0..100
            values["cpu.host_percent"] = min(100.0, max(0.0, 100.0 * busy_rate / total_rate))
        meminfo = {}
        for line in _read(f"{proc}/meminfo").splitlines():
            name, _, rest = line.partition(":")
            if name in ("MemTotal", "MemAvailable"):
                meminfo[name] = float(rest.split()[0]) * 1024
        if len(meminfo) == 2:
            values["memory.used_gb"] = (meminfo["MemTotal"] - meminfo["MemAvailable"]) / GB
            values["memory.available_gb"] = meminfo["MemAvailable"] / GB
        values["memory.rss_gb"] = int(_read(f"{proc}/self/statm").split()[1]) * self._page / GB
        try:
            io = dict(line.split(": ") for line in _read(f"{proc}/self/io").splitlines() if ": " in line)
            self._put_rate(values, "disk.read_mb_s", float(io["read_bytes"]), now, MB)
            self._put_rate(values, "disk.write_mb_s", float(io["write_bytes"]), now, MB)
        except (OSError, KeyError, ValueError):
            pass
        received = sent = 0.0
        for line in _read(f"{proc}/net/dev").splitlines()[2:]:
            interface, _, counters = line.partition(":")
            fields = counters.split()
            if interface.strip() != "lo" and len(fields) >= 9:
                received += float(fields[0])
                sent += float(fields[8])
        self._put_rate(values, "network.recv_mb_s", received, now, MB)
        self._put_rate(values, "network.sent_mb_s", sent, now, MB)

    def _psutil_sample(self, values: dict[str, float], now: float) -> None:
        psutil = self._psutil
        if psutil is None:
            return
        values["cpu.host_percent"] = float(psutil.cpu_percent(interval=None))
        memory = psutil.virtual_memory()
        values["memory.used_gb"] = (memory.total - memory.available) / GB
        values["memory.available_gb"] = memory.available / GB
        values["memory.rss_gb"] = self._process.memory_info().rss / GB
        try:
            io = self._process.io_counters()
            self._put_rate(values, "disk.read_mb_s", float(io.read_bytes), now, MB)
            self._put_rate(values, "disk.write_mb_s", float(io.write_bytes), now, MB)
        except (AttributeError, OSError, psutil.Error):
            pass
        network = psutil.net_io_counters()
        self._put_rate(values, "network.recv_mb_s", float(network.bytes_recv), now, MB)
        self._put_rate(values, "network.sent_mb_s", float(network.bytes_sent), now, MB)


def job_devices(environ: dict[str, str] | None = None, per_rank: bool = False) -> list[tuple[int, str]] | None:
    """The GPUs this job uses, as ``(index the job sees, NVML id)``: an int index or a ``GPU-...`` UUID.

    ``None``: every device of the host (``CUDA_VISIBLE_DEVICES`` unset). With ``per_rank`` and a
    ``LOCAL_RANK``, the one device that rank uses (torch's usual ``cuda:LOCAL_RANK``).
    """
    env = os.environ if environ is None else environ
    visible = env.get("CUDA_VISIBLE_DEVICES")
    devices = None
    if visible is not None:
        devices = [(index, item.strip()) for index, item in enumerate(visible.split(",")) if item.strip()]
        if any(item in ("-1", "") or item.startswith("-") for _, item in devices):
            devices = devices[: next(i for i, (_, item) in enumerate(devices) if item.startswith("-"))]
    local = env.get("LOCAL_RANK")
    if per_rank and local is not None and local.isdigit():
        rank = int(local)
        if devices is None:
            return [(rank, str(rank))]
        return [devices[rank]] if rank < len(devices) else []
    return devices


class NvmlSampler:
    """NVIDIA GPUs through NVML (``pynvml``): utilization, memory, temperature, power of the job's devices."""

    def __init__(self, devices: list[tuple[int, str]] | None, nvml: Any = None) -> None:
        if nvml is None:
            import pynvml  # type: ignore[import-not-found,unused-ignore]  # nvidia-ml-py

            nvml = pynvml
        self.nvml = nvml
        nvml.nvmlInit()
        if devices is None:
            devices = [(index, str(index)) for index in range(nvml.nvmlDeviceGetCount())]
        self.handles = [(index, self._handle(ident)) for index, ident in devices]

    def _handle(self, ident: str) -> Any:
        if ident.isdigit():
            return self.nvml.nvmlDeviceGetHandleByIndex(int(ident))
        return self.nvml.nvmlDeviceGetHandleByUUID(ident)

    def names(self) -> list[str]:
        names = []
        for _, handle in self.handles:
            name = self.nvml.nvmlDeviceGetName(handle)
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names

    def sample(self) -> dict[str, float]:
        nvml = self.nvml
        readers: list[tuple[str, Callable[[Any], float]]] = [
            ("utilization_percent", lambda handle: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)),
            ("memory_used_gb", lambda handle: nvml.nvmlDeviceGetMemoryInfo(handle).used / GB),
            ("memory_total_gb", lambda handle: nvml.nvmlDeviceGetMemoryInfo(handle).total / GB),
            ("temperature_c", lambda handle: float(nvml.nvmlDeviceGetTemperature(handle, 0))),  # 0: the GPU die
            ("power_w", lambda handle: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
        ]
        values: dict[str, float] = {}
        for index, handle in self.handles:
            for name, read in readers:
                try:
                    values[f"gpu.{index}.{name}"] = read(handle)
                except Exception:  # a device without a sensor (power on some boards) keeps its other values
                    pass
        return values

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:
            pass


class TorchMemorySampler:
    """torch's CUDA caching-allocator statistics, read only when the script imported torch itself."""

    def __init__(self, devices: list[tuple[int, str]] | None) -> None:
        self.devices = devices

    def sample(self) -> dict[str, float]:
        torch = sys.modules.get("torch")
        cuda = getattr(torch, "cuda", None)
        if cuda is None or not cuda.is_initialized() or not cuda.is_available():  # never initialises CUDA
            return {}
        indices = [index for index, _ in self.devices] if self.devices is not None else range(cuda.device_count())
        values = {}
        for index in indices:
            values[f"gpu.{index}.torch_allocated_gb"] = cuda.memory_allocated(index) / GB
            values[f"gpu.{index}.torch_reserved_gb"] = cuda.memory_reserved(index) / GB
        return values


class SystemSampler:
    """Every available source, sampled together into one ``{"system/...": value}`` dict."""

    def __init__(
        self, disk_path: str | os.PathLike[str] | None = None, *, per_rank: bool = False, nvml: Any = None
    ) -> None:
        devices = job_devices(per_rank=per_rank)
        self.sources: list[Any] = []
        host = HostSampler(disk_path)
        if host.available:
            self.sources.append(host)
        self.gpu: NvmlSampler | None = None
        try:
            self.gpu = NvmlSampler(devices, nvml)
            self.sources.append(self.gpu)
        except Exception:  # no pynvml, no driver, no NVIDIA GPU: no NVML values
            self.gpu = None
        self.sources.append(TorchMemorySampler(devices))

    def sample(self) -> dict[str, float]:
        values: dict[str, float] = {}
        for source in list(self.sources):
            try:
                values.update(source.sample())
            except Exception:  # a source that fails once is dropped: it would fail every interval
                self.sources.remove(source)
        return {PREFIX + name: round(value, 4) for name, value in values.items()}

    def close(self) -> None:
        if self.gpu is not None:
            self.gpu.close()
