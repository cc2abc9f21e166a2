"""Measure the local machine and write a hardware spec for it.

Contract: ``() -> HardwareSpec`` marked ``measured: true``. Memory bandwidth comes
from a STREAM-like copy and triad over arrays far larger than the caches; compute
throughput per precision from dense matrix products (numpy/BLAS for fp64/fp32,
torch for bf16/fp16 when installed). The best of several trials is kept: the
figures are *achievable* peaks of this machine, which is what makes SOLAR useful
on a CPU-only box; the spec says so in its notes and sources.

Note [No floor is a measurement]: a spec holds figures within plausible ranges
(`solar.hw.spec`: at least 1 GFLOP/s and 1 GB/s). A matmul measured below that is
left out of the spec, with a note saying what was measured (no roof for that
precision: the bounds then use a faster peak, which keeps them lower bounds); a
bandwidth below it is refused (E0404): every bound needs a measured one. A value
is never raised to the floor and written as if measured. The one adjusted figure,
fp32 raised to a faster fp64 (noise; an fp32 pipe is never slower), lowers bounds
and is recorded in the notes.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import socket
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from solar.diagnostics import HardwareSpecError
from solar.hw.loader import validate_hardware_spec
from solar.hw.spec import HardwareSpec

__all__ = [
    "MIN_MEASURED_BYTES_PER_S",
    "MIN_MEASURED_FLOPS_PER_S",
    "calibrate_machine",
    "measure_bandwidth_bytes_per_s",
    "measure_matmul_flops_per_s",
]

MIN_MEASURED_FLOPS_PER_S = 1e9
"""The smallest FLOP rate a spec may hold (`solar.hw.spec`'s plausible range)."""
MIN_MEASURED_BYTES_PER_S = 1e9
"""The smallest bandwidth a spec may hold (`solar.hw.spec`'s plausible range)."""


def _quiet(message: str) -> None:
    del message


def _best_of(fn: Callable[[], object], trials: int) -> float:
    best = float("inf")
    for _ in range(trials):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure_bandwidth_bytes_per_s(*, array_bytes: int = 256 * 2**20, trials: int = 5) -> float:
    """Best of a STREAM-like copy (2 bytes moved per byte) and triad (3 per byte)."""
    n = array_bytes // 8
    a = np.ones(n)
    b = np.full(n, 2.0)
    c = np.empty(n)
    copy_s = _best_of(lambda: np.copyto(c, a), trials)

    def triad() -> None:
        np.multiply(b, 3.0, out=c)
        np.add(c, a, out=c)

    # the triad as two numpy passes moves 5 arrays' worth of bytes (read b, write c,
    # read c, read a, write c)
    triad_s = _best_of(triad, trials)
    return max(2 * array_bytes / copy_s, 5 * array_bytes / triad_s)


def measure_matmul_flops_per_s(dtype: str, *, n: int = 1024, trials: int = 3) -> float | None:
    """Dense n×n×n matmul throughput (2n³ FLOPs per product) for ``dtype``."""
    if dtype in ("fp64", "fp32"):
        np_dtype = np.float64 if dtype == "fp64" else np.float32
        rng = np.random.default_rng(0)
        x = rng.standard_normal((n, n)).astype(np_dtype)
        y = rng.standard_normal((n, n)).astype(np_dtype)
        np.matmul(x, y)  # warm-up (BLAS threads, pages)
        return 2 * n**3 / _best_of(lambda: np.matmul(x, y), trials)
    try:
        import torch
    except ImportError:
        return None
    tdtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    tx = torch.randn(n, n).to(tdtype)
    ty = torch.randn(n, n).to(tdtype)
    try:
        tx @ ty
    except RuntimeError:
        return None  # no kernel for this dtype on this machine
    return 2 * n**3 / _best_of(lambda: torch.matmul(tx, ty), trials)


def _cache_bytes() -> float | None:
    """Largest CPU cache (the last level) from sysfs, if readable."""
    best = 0.0
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = path.read_text().strip()
        scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            best = max(best, float(digits) * scale)
    return best or None


def _memory_bytes() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 16e9


def calibrate_machine(
    *,
    name: str | None = None,
    quick: bool = False,
    progress: Callable[[str], None] = _quiet,
) -> HardwareSpec:
    """Measure this machine and return a validated, ``measured`` spec.

    Args:
        name: spec id; defaults to ``local_<hostname>``.
        quick: smaller arrays and fewer trials (for tests).
        progress: called with each stage as it starts and each figure as it is measured.

    Raises:
        HardwareSpecError: E0404, the measured bandwidth is below what a spec may hold
            (Note [No floor is a measurement]).
    """
    array_bytes = (32 if quick else 256) * 2**20
    n = 256 if quick else 1024
    trials = 2 if quick else 5
    progress(f"memory bandwidth: STREAM copy and triad over {array_bytes // 2**20} MiB arrays")
    bw = measure_bandwidth_bytes_per_s(array_bytes=array_bytes, trials=trials)
    progress(f"  {bw / 1e9:.1f} GB/s")
    if bw < MIN_MEASURED_BYTES_PER_S:
        raise HardwareSpecError(
            f"measured memory bandwidth {bw / 1e9:.3g} GB/s is below the 1 GB/s a spec may hold; "
            "no spec written",
            code="E0404",
            notes=("run it again on an idle machine",),
        )
    vector: dict[str, float] = {}
    notes: list[str] = []
    for prec in ("fp64", "fp32", "bf16", "fp16"):
        progress(f"{prec} matmul throughput: {n}x{n}x{n} products")
        value = measure_matmul_flops_per_s(prec, n=n, trials=5 if quick else 3)  # ms each if quick
        if value is None:
            progress(f"  {prec}: no kernel on this machine (left out)")
        elif value < MIN_MEASURED_FLOPS_PER_S:
            progress(f"  {value / 1e9:.3g} GFLOP/s: below 1 GFLOP/s, left out of the spec")
            notes.append(
                f"{prec} matmuls measured {value / 1e9:.3g} GFLOP/s, below the 1 GFLOP/s a spec "
                f"may hold: left out (no {prec} roof; bounds use a faster peak)."
            )
        else:
            progress(f"  {value / 1e9:.1f} GFLOP/s")
            vector[prec] = value
    if "fp64" in vector and vector.get("fp32", 0.0) < vector["fp64"]:
        # Measurement noise can invert the two (or leave fp32 out under load); an fp32
        # pipe is never slower than fp64.
        measured = (f"measured {vector['fp32'] / 1e9:.1f} GFLOP/s" if "fp32" in vector
                    else "left out")
        notes.append(
            f"fp32 {measured}, below fp64 (noise): raised to "
            f"fp64's {vector['fp64'] / 1e9:.1f} GFLOP/s, which only lowers bounds."
        )
        vector["fp32"] = vector["fp64"]
    host = socket.gethostname() or "localhost"
    spec_name = name or "local_" + "".join(ch if ch.isalnum() else "_" for ch in host)
    if not spec_name[0].isalpha():
        spec_name = f"local_{spec_name}"
    today = dt.date.today().isoformat()
    data = {
        "name": spec_name,
        "display_name": f"{platform.processor() or platform.machine()} on {host} (measured)",
        "vendor": platform.system() or "local",
        "kind": "cpu",
        "measured": True,
        "peak_flops_per_s": {},
        "vector_flops_per_s": vector,
        "dram_capacity_bytes": _memory_bytes(),
        "dram_bandwidth_bytes_per_s": bw,
        "l2_capacity_bytes": _cache_bytes(),
        "sm_count": os.cpu_count() or 1,
        "notes": [
            "Measured by `solar calibrate`, not a datasheet: bandwidth is the best of a "
            "STREAM-like copy and triad; compute is the best dense matmul throughput per "
            "precision. These are achievable figures of this machine, so a tuned kernel "
            "may run slightly faster than bounds computed from them.",
            f"array size {array_bytes // 2**20} MiB, matmul n={n}",
            *notes,
        ],
        "sources": [
            {
                "url": f"solar calibrate on {host}",
                "edition": f"measured {today} with numpy {np.__version__}",
                "fields": ["*"],
            }
        ],
    }
    return validate_hardware_spec(data, origin=f"calibration of {host}")
