"""What the benchmark ran on: host, CPU, governor, library versions, git commit, GPU and driver.

Everything here is read, never changed: clocks, power limits and MIG settings stay as they are.
A value that cannot be read is recorded as unavailable with the reason, never guessed.
"""

from __future__ import annotations

import os
import platform
import shlex
import socket
import subprocess
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from profaudit.samples import throttle_names

LIBRARIES = ("profaudit", "numpy", "torch", "triton", "jax", "jaxlib", "nvidia-ml-py", "polars")


def has_nvidia_gpu() -> bool:
    """Cheap check for an NVIDIA driver and device node (no import of torch or NVML)."""
    if os.environ.get("PROFAUDIT_FORCE_CPU") == "1":
        return False
    return Path("/dev/nvidiactl").exists() or Path("/proc/driver/nvidia/version").exists()


_TRITON_IMPORTED_EARLY = False


def ensure_triton_mode() -> None:
    """Without a GPU, Triton kernels can only run in its interpreter. Triton reads TRITON_INTERPRET
    when functions are decorated, its own library (tl.max, tl.sum, ...) included, so the variable
    must be set before triton is first imported."""
    global _TRITON_IMPORTED_EARLY
    if "TRITON_INTERPRET" not in os.environ and not has_nvidia_gpu():
        os.environ["TRITON_INTERPRET"] = "1"
        if "triton" in sys.modules:
            _TRITON_IMPORTED_EARLY = True


def triton_imported_early() -> bool:
    """triton was imported before profaudit set TRITON_INTERPRET=1: its library is not interpreted."""
    return _TRITON_IMPORTED_EARLY


def triton_interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def library_versions() -> dict[str, str]:
    """Installed versions (from package metadata: nothing is imported)."""
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


@lru_cache(maxsize=1)
def cpu_model() -> str | None:
    text = _read("/proc/cpuinfo")
    if text:
        for line in text.splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or None


def host_governor() -> dict[str, Any]:
    """The CPU frequency governor of every CPU (FAIRNESS P14), or why it is unknown."""
    base = Path("/sys/devices/system/cpu")
    govs = {}
    for d in sorted(base.glob("cpu[0-9]*")):
        g = _read(str(d / "cpufreq" / "scaling_governor"))
        if g:
            govs[d.name] = g
    if not govs:
        return {"available": False, "reason": "no /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor (virtual machine or cpufreq driver absent)"}
    values = sorted(set(govs.values()))
    return {"available": True, "governor": values[0] if len(values) == 1 else "mixed:" + ",".join(values), "per_cpu": govs}


def cpu_turbo() -> dict[str, Any]:
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo in ("0", "1"):
        return {"available": True, "turbo": no_turbo == "0", "source": "intel_pstate/no_turbo"}
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if boost in ("0", "1"):
        return {"available": True, "turbo": boost == "1", "source": "cpufreq/boost"}
    return {"available": False, "reason": "neither intel_pstate/no_turbo nor cpufreq/boost is readable"}


@lru_cache(maxsize=1)
def cpu_cache_bytes() -> tuple[int | None, str]:
    """Size of the largest (last-level) CPU cache, from sysfs."""
    best, where = None, ""
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        size = _read(str(d / "size"))
        level = _read(str(d / "level"))
        if not size:
            continue
        s = size.upper()
        mult = 1
        if s.endswith("K"):
            mult, s = 1024, s[:-1]
        elif s.endswith("M"):
            mult, s = 1024 * 1024, s[:-1]
        try:
            v = int(s) * mult
        except ValueError:
            continue
        if best is None or v > best:
            best, where = v, f"/sys/devices/system/cpu/cpu0/cache/{d.name} (L{level})"
    return best, where


def git_info(path: str | os.PathLike | None) -> dict[str, Any]:
    """Commit and dirty state of the repository holding `path` (the benchmark file)."""
    if path is None:
        return {"available": False, "reason": "no file"}
    folder = str(Path(path).resolve().parent)
    try:
        head = subprocess.run(["git", "-C", folder, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return {"available": False, "reason": "not in a git repository"}
        status = subprocess.run(["git", "-C", folder, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10)
        return {"available": True, "commit": head.stdout.strip(), "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}
    except (OSError, subprocess.SubprocessError) as exc:
        return {"available": False, "reason": f"git not usable: {exc}"}


def host_environment(bench_file: str | os.PathLike | None = None) -> dict[str, Any]:
    cache, cache_src = cpu_cache_bytes()
    return {
        "host": socket.gethostname(),
        "command_line": shlex.join(sys.argv),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_cache_bytes": cache,
        "cpu_cache_source": cache_src or None,
        "host_governor": host_governor(),
        "cpu_turbo": cpu_turbo(),
        "libraries": library_versions(),
        "git": git_info(bench_file),
        "triton_interpret": triton_interpreted(),
        "env": {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "TRITON_INTERPRET", "JAX_PLATFORMS", "XLA_FLAGS", "OMP_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ},
    }


# ------------------------------------------------------------------------------------------------
# NVML: GPU identity and telemetry (read-only)
# ------------------------------------------------------------------------------------------------

class Telemetry:
    """Samples of SM/memory clock, temperature, power and throttle reasons; `None` when absent."""

    available = False
    source = "unavailable"
    reason = ""

    def sample(self) -> dict[str, Any] | None:
        return None

    def identity(self) -> dict[str, Any]:
        return {"available": False, "reason": self.reason}

    def before_run(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


class NoTelemetry(Telemetry):
    def __init__(self, reason: str):
        self.reason = reason


class NvmlTelemetry(Telemetry):
    """NVML through nvidia-ml-py (`pynvml`), imported late; read-only queries only."""

    available = True
    source = "nvml"

    def __init__(self, index: int = 0):
        import pynvml  # provided by nvidia-ml-py

        self.nv = pynvml
        pynvml.nvmlInit()
        self.index = index
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        self._reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)

    def _try(self, fn, *args, default=None):
        try:
            return fn(*args)
        except Exception:  # a query a GPU or driver does not support answers "unknown", not an error
            return default

    def sample(self) -> dict[str, Any]:
        nv, h = self.nv, self.handle
        out: dict[str, Any] = {}
        sm = self._try(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM)
        mem = self._try(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM)
        temp = self._try(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU)
        power = self._try(nv.nvmlDeviceGetPowerUsage, h)
        reasons = self._try(self._reasons, h) if self._reasons else None
        out["sm_clock_mhz"] = float(sm) if sm is not None else None
        out["mem_clock_mhz"] = float(mem) if mem is not None else None
        out["temperature_c"] = float(temp) if temp is not None else None
        out["power_w"] = power / 1000.0 if power is not None else None
        out["throttle_reasons"] = throttle_names(int(reasons)) if reasons is not None else None
        return out

    def identity(self) -> dict[str, Any]:
        nv, h = self.nv, self.handle

        def s(v):
            return v.decode() if isinstance(v, bytes) else v

        mig = self._try(nv.nvmlDeviceGetMigMode, h)
        cuda = self._try(nv.nvmlSystemGetCudaDriverVersion)
        limit = self._try(nv.nvmlDeviceGetEnforcedPowerLimit, h)
        mem = self._try(nv.nvmlDeviceGetMemoryInfo, h)
        return {
            "available": True,
            "index": self.index,
            "name": s(self._try(nv.nvmlDeviceGetName, h)),
            "uuid": s(self._try(nv.nvmlDeviceGetUUID, h)),
            "driver_version": s(self._try(nv.nvmlSystemGetDriverVersion)),
            "cuda_driver_version": f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else None,
            "power_limit_w": limit / 1000.0 if limit is not None else None,
            "max_sm_clock_mhz": self._try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
            "max_mem_clock_mhz": self._try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
            "applications_sm_clock_mhz": self._try(nv.nvmlDeviceGetApplicationsClock, h, nv.NVML_CLOCK_SM),
            "mig_mode": (None if mig is None else ("enabled" if mig[0] else "disabled")),
            "memory_total_bytes": getattr(mem, "total", None),
            "persistence_mode": self._try(nv.nvmlDeviceGetPersistenceMode, h),
        }

    def before_run(self) -> dict[str, Any]:
        """Load on the GPU just before a case starts (FAIRNESS P13)."""
        nv, h = self.nv, self.handle
        util = self._try(nv.nvmlDeviceGetUtilizationRates, h)
        procs = self._try(nv.nvmlDeviceGetComputeRunningProcesses, h, default=None)
        out: dict[str, Any] = {}
        if util is not None:
            out["gpu_util_before_pct"] = float(util.gpu)
        if procs is not None:
            me = os.getpid()
            out["other_gpu_processes"] = sum(1 for p in procs if getattr(p, "pid", None) != me)
        return out

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except Exception:
            pass


def open_telemetry(device_kind: str, index: int = 0) -> Telemetry:
    """NVML telemetry for a CUDA device; unavailable (with the reason) otherwise."""
    if device_kind != "cuda":
        return NoTelemetry(f"no NVIDIA GPU in use (device {device_kind})")
    try:
        return NvmlTelemetry(index)
    except ImportError:
        return NoTelemetry("nvidia-ml-py is not installed (pip install 'profaudit[bench]')")
    except Exception as exc:
        return NoTelemetry(f"NVML failed: {type(exc).__name__}: {exc}")
