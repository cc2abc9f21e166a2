"""Measure a source program's real run time on the local device.

Contract: ``callable -> Timing``. Warm-up runs, then repeated trials; on a CUDA
device each trial is timed with CUDA events around the call (the work is
synchronised), elsewhere with a monotonic clock. Frameworks are imported lazily.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Timing", "measure_jax", "measure_torch", "time_callable"]


@dataclass(frozen=True, slots=True)
class Timing:
    """Trial statistics in milliseconds."""

    median_ms: float
    min_ms: float
    max_ms: float
    trials: int
    device: str


def time_callable(
    run: Callable[[], object],
    *,
    sync: Callable[[], None] | None = None,
    warmup: int = 3,
    trials: int = 10,
    device: str = "cpu",
    event_timer: Callable[[Callable[[], object]], float] | None = None,
) -> Timing:
    """Time ``run``: ``warmup`` untimed calls, then ``trials`` timed ones.

    Args:
        run: the work; it must not return before its results are ready unless ``sync``
            waits for them.
        sync: waits for asynchronous work (e.g. ``torch.cuda.synchronize``).
        warmup: untimed calls first (compilation, caches, allocator).
        trials: timed calls.
        device: recorded in the result.
        event_timer: returns one trial's time in ms (CUDA events); overrides the clock.
    """
    from solar.frontends.kit.loader import user_stdout_to_stderr

    samples: list[float] = []
    with user_stdout_to_stderr():  # the program's prints (Note [User output])
        for _ in range(max(0, warmup)):
            run()
        if sync:
            sync()
        for _ in range(max(1, trials)):
            if event_timer is not None:
                samples.append(event_timer(run))
                continue
            start = time.perf_counter()
            run()
            if sync:
                sync()
            samples.append((time.perf_counter() - start) * 1e3)
    return Timing(statistics.median(samples), min(samples), max(samples), len(samples), device)


def measure_torch(
    model: Any,
    inputs: Sequence[Any],
    kwargs: Mapping[str, Any] | None = None,
    *,
    warmup: int = 3,
    trials: int = 10,
) -> Timing:
    """Run a torch module on the local device (CUDA if available) under ``no_grad``."""
    import torch

    use_cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if use_cuda else "cpu")
    model = model.to(dev).eval() if hasattr(model, "to") else model
    args = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in inputs]
    kw = {k: x.to(dev) if isinstance(x, torch.Tensor) else x for k, x in (kwargs or {}).items()}

    def run() -> object:
        with torch.no_grad():
            return model(*args, **kw)

    if use_cuda:

        def cuda_trial(fn: Callable[[], object]) -> float:
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            return float(start.elapsed_time(end))

        name = torch.cuda.get_device_name(dev)
        return time_callable(
            run,
            sync=torch.cuda.synchronize,
            warmup=warmup,
            trials=trials,
            device=name,
            event_timer=cuda_trial,
        )
    return time_callable(run, warmup=warmup, trials=trials, device="cpu")


def measure_jax(
    fn: Callable[..., Any], inputs: Sequence[Any], *, warmup: int = 3, trials: int = 10
) -> Timing:
    """Run a jitted JAX function, blocking on its results each trial."""
    import jax

    jitted = jax.jit(fn)
    dev = jax.devices()[0]

    def run() -> object:
        return jax.block_until_ready(jitted(*inputs))  # type: ignore[no-untyped-call]

    return time_callable(run, warmup=warmup, trials=trials, device=str(dev.device_kind))
