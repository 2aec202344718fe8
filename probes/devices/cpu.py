"""The host CPU as a device: peak memory from the process's resident set (Linux /proc, else
``ru_maxrss``). torch is imported when the device is opened."""

from __future__ import annotations

import contextlib
import resource
import sys
from pathlib import Path

from probes.devices.seam import Device

__all__ = ["CpuDevice", "meminfo_gib"]

_GIB = 2.0**30
_PROC_STATUS = Path("/proc/self/status")
_MEMINFO = Path("/proc/meminfo")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_RESET_PEAK_RSS = "5"  # clear_refs value that resets VmHWM to the current RSS (Linux >= 4.0)


class CpuDevice(Device):
    """The host CPU. Peak memory is the process's resident set above what it held when the
    device was created (so the torch runtime's own few hundred MiB are not counted as the
    step's memory).

    On Linux the peak is VmHWM from /proc/self/status, and ``reset_peak_memory`` restarts it
    by writing ``5`` to /proc/self/clear_refs; where either fails the peak is the process's
    lifetime ``ru_maxrss`` (which cannot be reset) above the same baseline.
    """

    def __init__(self) -> None:
        import torch

        super().__init__(torch.device("cpu"), "cpu")
        self._baseline_gib = _kib_field_gib(_PROC_STATUS, "VmRSS") or _maxrss_gib()

    def reset_peak_memory(self) -> None:
        """Restart the peak at the current resident set (where the kernel allows it)."""
        with contextlib.suppress(OSError):
            _CLEAR_REFS.write_text(_RESET_PEAK_RSS)

    def peak_memory_gib(self) -> float | None:
        """Peak resident memory since the last reset, above the creation-time baseline."""
        peak = _kib_field_gib(_PROC_STATUS, "VmHWM") or _maxrss_gib()
        return max(0.0, peak - self._baseline_gib)

    def total_memory_gib(self) -> float | None:
        """MemTotal from /proc/meminfo where available."""
        return meminfo_gib("MemTotal")


def _maxrss_gib() -> float:
    """Lifetime peak RSS of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1.0 if sys.platform == "darwin" else 1024.0
    return peak * scale / _GIB


def meminfo_gib(key: str) -> float | None:
    """A ``kB`` field of /proc/meminfo in GiB (``MemTotal``); None where unknown."""
    return _kib_field_gib(_MEMINFO, key)


def _kib_field_gib(path: Path, key: str) -> float | None:
    """A ``kB`` field of a /proc file in GiB; None where there is no such file or field."""
    try:
        with path.open() as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024 / _GIB
    except OSError:
        return None
    return None
