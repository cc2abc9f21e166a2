"""Measure a source program's real run time on the local device.

Contract: ``callable -> Timing``. Warm-up runs, then repeated trials; on a CUDA
device each trial is timed with CUDA events around the call (the work is
synchronised), elsewhere with a monotonic clock. Frameworks are imported lazily.

PyTorch runs are also profiled once (torch.profiler, CPU and CUDA activities) after
the trials: `Timing.ops` lists every ATen op of that run in execution order, with
its time (CUDA: device time of the kernels it launched; CPU: its CPU time, children
included), and `match_ops` ties them to IR kernels (Note [Matching profiled ops]).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from solar.guard import user_stdout_to_stderr

__all__ = [
    "ProfiledOp",
    "Timing",
    "match_ops",
    "measure_jax",
    "measure_torch",
    "profile_torch",
    "time_callable",
]


SLOW_RUN_S = 1.0
"""A first run slower than this cuts warm-up to one run and trials to `SLOW_TRIALS`."""
SLOW_TRIALS = 3


@dataclass(frozen=True, slots=True)
class ProfiledOp:
    """One ATen op of a profiled run.

    Attributes:
        op: the op name without ``aten::`` (``addmm``, ``layer_norm``).
        start_us: start on the profiler's clock.
        end_us: end on the profiler's clock (its children lie in between).
        time_ms: its time (see the module docstring).
        top_level: called by the program itself, not by another ATen op.
    """

    op: str
    start_us: float
    end_us: float
    time_ms: float
    top_level: bool


@dataclass(frozen=True, slots=True)
class Timing:
    """Trial statistics in milliseconds, and the ops of one profiled run (PyTorch)."""

    median_ms: float
    min_ms: float
    max_ms: float
    trials: int
    device: str
    ops: tuple[ProfiledOp, ...] = ()


def _word(name: str) -> str:
    """The last word of a kernel or op name, without a de-duplication suffix.

    >>> _word("layer1_0_conv1_convolution"), _word("add_1"), _word("scaled_dot_product_attention")
    ('convolution', 'add', 'attention')
    """
    parts = [p for p in name.lower().split("_") if p]
    while len(parts) > 1 and parts[-1].isdigit():
        parts.pop()
    return parts[-1] if parts else name


def match_ops(
    kernels: Sequence[str], ops: Sequence[ProfiledOp]
) -> list[tuple[ProfiledOp, str | None]]:
    """Tie profiled ops to IR kernels, in execution order.

    Note [Matching profiled ops]: an IR kernel is named after the ATen op it lowers
    (``qkv_addmm``, ``ln1_layer_norm``, ``attention``), and kernels are in execution
    order. Walking both in order, each kernel takes the first op at or after the
    previous match whose last word equals the kernel's last word (``addmm``,
    ``norm``, ``attention``); the op's children are then skipped (``layer_norm``
    calls ``native_layer_norm``). A kernel with no such op stays unmatched (fused
    away, or an op the profiler names differently); top-level ops no kernel took are
    listed unmatched, so no measured time disappears.

    Returns:
        ``(op, kernel or None)`` for every matched op and every unmatched top-level op.

    >>> ops = [ProfiledOp("linear", 0, 10, 1.0, True), ProfiledOp("addmm", 1, 9, 0.9, False),
    ...        ProfiledOp("view", 11, 12, 0.01, True), ProfiledOp("gelu", 13, 20, 0.5, True)]
    >>> [(o.op, k) for o, k in match_ops(["fc_addmm", "gelu"], ops)]
    [('addmm', 'fc_addmm'), ('view', None), ('gelu', 'gelu')]
    """
    taken: dict[int, str] = {}
    pos = 0
    for kernel in kernels:
        word = _word(kernel)
        for i in range(pos, len(ops)):
            if _word(ops[i].op) == word:
                taken[i] = kernel
                end = ops[i].end_us
                pos = i + 1
                while pos < len(ops) and ops[pos].start_us < end:
                    pos += 1
                break
    out: list[tuple[ProfiledOp, str | None]] = []
    covered_until = -float("inf")
    for i, op in enumerate(ops):
        if i in taken:
            out.append((op, taken[i]))
            covered_until = max(covered_until, op.end_us)
        elif op.top_level and op.start_us >= covered_until and not _inside_taken(op, ops, taken):
            out.append((op, None))
    return out


def _inside_taken(op: ProfiledOp, ops: Sequence[ProfiledOp], taken: Mapping[int, str]) -> bool:
    """True when a taken op lies inside ``op`` (its time is then counted there)."""
    return any(op.start_us <= ops[i].start_us < op.end_us for i in taken)


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
        warmup: untimed calls first (compilation, caches, allocator); one when the first
            takes over `SLOW_RUN_S`.
        trials: timed calls (at most `SLOW_TRIALS` after a slow first run).
        device: recorded in the result.
        event_timer: returns one trial's time in ms (CUDA events); overrides the clock.
    """
    samples: list[float] = []
    with user_stdout_to_stderr():  # the program's prints (Note [User output])
        for i in range(max(0, warmup)):
            start = time.perf_counter()
            run()
            if sync:
                sync()
            if i == 0 and time.perf_counter() - start > SLOW_RUN_S:
                # a run of seconds (a realistic size on a CPU): one warm-up is enough,
                # and a few trials give the median
                trials = min(trials, SLOW_TRIALS)
                break
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
        timing = time_callable(
            run,
            sync=torch.cuda.synchronize,
            warmup=warmup,
            trials=trials,
            device=name,
            event_timer=cuda_trial,
        )
    else:
        timing = time_callable(run, warmup=warmup, trials=trials, device="cpu")
    return replace(timing, ops=profile_torch(run, cuda=use_cuda))


def profile_torch(run: Callable[[], object], *, cuda: bool) -> tuple[ProfiledOp, ...]:
    """The ATen ops of one run of ``run`` under torch.profiler, in execution order."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with user_stdout_to_stderr(), profile(activities=activities) as prof:
        run()
        if cuda:
            torch.cuda.synchronize()
    ops = []
    for e in prof.events():
        if not e.name.startswith("aten::"):
            continue
        parent = e.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        time_us = float(e.device_time_total) if cuda else float(e.cpu_time_total)
        ops.append(ProfiledOp(e.name[len("aten::"):], float(e.time_range.start),
                              float(e.time_range.end), time_us / 1e3, parent is None))
    ops.sort(key=lambda o: (o.start_us, -o.end_us))
    return tuple(ops)


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
