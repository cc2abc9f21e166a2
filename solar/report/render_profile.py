"""The profiler-style tables of the terminal summary: kernels (full names, FLOPs and
bytes), op types, modules, and the hints whose effect on the bound is computed.

Contract: ``ArchBounds -> list[str]``, deterministic. A name longer than the name
column goes on a line of its own above its numbers, never cut (Note [Full names]).

Note [Full names]
~~~~~~~~~~~~~~~~~
Kernel and module names are paths (``layer4_1_conv2_conv2d``) and the part that tells
two kernels apart is often at the end, so a name is never shortened: when any name of
a table is wider than its column, every row of that table prints its name on a line of
its own and the numbers below it.

Note [Hints that move the bound]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A hint is printed only with the bound its action gives. ``--precision bf16`` is the
program cast to bf16 (Note [Precision what-if bytes] in `solar.bounds.recast`): its
fp32/TF32 matmuls and convolutions at the bf16 tensor peak and its fp32 tensors at two
bytes. The pipeline bounds that what-if with every model (`ArchBounds.bf16_bounds_s`),
so the hint promises exactly what ``--precision bf16`` then reports. When neither the
fused nor the unfused bound moves by at least ``HINT_MIN_GAIN``, no hint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.diagnostics import printable
from solar.report.schema import ArchBounds, BreakdownRow, KernelRow
from solar.report.units import format_bytes, format_flops, format_time

__all__ = [
    "HINT_MIN_GAIN",
    "breakdown_lines",
    "column_notes",
    "kernel_table",
    "precision_hint",
]

HINT_MIN_GAIN = 0.05
"""A hint must lower a bound by at least this share of it (Note [Hints that move the bound])."""

NAME_W = 24
"""The kernel column of one-line rows; a longer name takes a line of its own."""

LINE_W = 100
"""The widest one-line row (the renderer's ~100 columns); wider tables take two lines a
row: the name (and source) on one, the numbers below it."""

_LOW_PRECISION = ("bf16", "fp16", "fp8")


def _fmt() -> tuple[Callable[[float], str], Callable[[float], str], Callable[[float], str]]:
    return format_time, format_flops, format_bytes


def _table(head: str, names: Sequence[str], cells: Sequence[str], width: int,
           tags: Sequence[str] = ()) -> list[str]:
    """Rows of ``names`` and ``cells`` under ``head`` (Note [Full names]); ``tags`` (a
    kernel's source line) follow the cells on one-line rows, the name on two-line rows."""
    tags = tags or [""] * len(names)
    w = max((len(n) for n in names), default=0)
    w = max(w, len(head.split()[0]) if head else 0)
    first, _, rest = head.partition(" ")
    tag_w = max(len(t) for t in tags) if tags else 0
    tag_head = f"  {'source':<{tag_w}}" if tag_w else ""
    rows = [f"    {n:<{w}} {c}" + (f"  {t:<{tag_w}}" if tag_w else "")
            for n, c, t in zip(names, cells, tags, strict=True)]
    if w <= width and max(len(r.rstrip()) for r in rows) <= LINE_W:
        return [f"    {first:<{w}} {rest}{tag_head}".rstrip(), *(r.rstrip() for r in rows)]
    lines = [f"    {first}" + ("  (source)" if tag_w else ""), f"      {rest}".rstrip()]
    for n, c, t in zip(names, cells, tags, strict=True):
        lines.append(f"    {n}  ({t})" if t else f"    {n}")
        lines.append(f"      {c}".rstrip())
    return lines


def _ai(flops_per_byte: float) -> str:
    """A kernel's FLOPs per byte in at most 7 characters.

    >>> _ai(381.12), _ai(2.5e6)
    ('381.1', '2.5e+06')
    """
    return f"{flops_per_byte:.1f}" if flops_per_byte < 1e5 else f"{flops_per_byte:.2g}"


def _fp32_tensor(k: KernelRow) -> bool:
    return k.unit == "tensor" and (k.precision in ("fp32", "tf32") or "x" in k.precision)


def roof_label(k: KernelRow) -> str:
    """The roof that binds a kernel: its pipe when compute-bound, else ``memory``."""
    return f"{k.unit}:{k.precision}" if k.bottleneck == "compute" else "memory"


def kernel_table(kernels: Sequence[KernelRow], top: int, next_step: Callable[[KernelRow], str]
                 ) -> list[str]:
    """The next-steps table: by gap to SOL when measured, else by unfused bound, with
    each kernel's FLOPs and bytes (all it moves, DRAM and L2)."""
    if not kernels or top <= 0:
        return []
    ftime, fflops, fbytes = _fmt()
    measured = [k for k in kernels if k.measured_s is not None]
    if measured:
        ranked = sorted(measured, key=lambda k: -((k.measured_s or 0.0) - k.time_s))[:top]
        head = [
            f"  next steps: {len(ranked)} of {len(kernels)} kernels by gap to SOL "
            f"(measured - bound; {len(measured)} matched to profiled ops):"
        ]
        cells = [
            f"{ftime(k.time_s):>10} {ftime(k.measured_s or 0.0):>10} "
            f"{ftime(max(0.0, (k.measured_s or 0.0) - k.time_s)):>10}  "
            f"{roof_label(k):<13} {next_step(k)}"
            for k in ranked
        ]
        cols = f"kernel {'bound':>10} {'measured':>10} {'gap':>10}  {'roof':<13} next step"
        return [*head, *_table(cols, [k.name for k in ranked], cells, 28)]
    total = sum(k.time_s for k in kernels) or 1.0
    ranked = sorted(kernels, key=lambda k: -k.time_s)[:top]
    head = [
        f"  next steps: {len(ranked)} of {len(kernels)} kernels by unfused bound "
        "(no per-kernel measurement of this device):"
    ]
    cells = [
        f"{ftime(k.time_s):>10} {k.time_s / total:6.1%}  {fflops(k.flops):>10} "
        f"{fbytes(k.bytes):>8} {_ai(k.arithmetic_intensity_flops_per_byte):>7}  "
        f"{roof_label(k):<13} {next_step(k):<32}"
        for k in ranked
    ]
    cols = (f"kernel {'bound':>10} {'share':>6}  {'FLOPs':>10} {'bytes':>8} {'AI F/B':>7}  "
            f"{'roof':<13} {'next step':<32}")
    # the user's source line of each kernel, when the frontend knows it (kernels[].source)
    tags = [k.source or "-" for k in ranked] if any(k.source for k in ranked) else []
    return [*head, *_table(cols, [k.name for k in ranked], cells, NAME_W, tags),
            *_legend(ranked)]


def _legend(ranked: Sequence[KernelRow]) -> list[str]:
    """What the kernel table's ``bytes`` and ``roof`` columns are (``bytes`` is no DRAM
    figure), and what an emulated pipe's name means, when one is listed.

    >>> k = KernelRow(name="mm", flops=1.0, bytes=8.0, unit="tensor", precision="3xtf32",
    ...               time_s=1e-6, bottleneck="compute", arithmetic_intensity_flops_per_byte=0.1)
    >>> print("\\n".join(_legend([k])))
        bytes: the distinct bytes a kernel reads and writes (through L2 or DRAM); AI F/B: FLOPs
        per byte of them; roof: what binds it, memory or its compute pipe:precision
        (3xtf32: fp32 accuracy in 3 TF32 passes)
    """
    emulated = sorted({k.precision for k in ranked if roof_label(k) != "memory"
                       and k.precision[:1].isdigit() and "x" in k.precision})
    passes = ", ".join(f"{p}: fp32 accuracy in {p.split('x')[0]} {p.split('x')[1].upper()} "
                       "passes" for p in emulated)
    return ["    bytes: the distinct bytes a kernel reads and writes (through L2 or DRAM); "
            "AI F/B: FLOPs",
            "    per byte of them; roof: what binds it, memory or its compute pipe:precision"
            + (f"\n    ({passes})" if passes else "")]


def breakdown_lines(arch: ArchBounds, rows: Sequence[BreakdownRow], what: str, top: int
                    ) -> list[str]:
    """A by-op-type or by-module table of ``arch``'s unfused bound, slowest first; none
    when every row is a single kernel (the next-steps table shows those)."""
    mine = [r for r in rows if arch.arch in r.time_s]
    if top <= 0 or all(r.kernels == 1 for r in mine):
        return []  # nothing grouped: the kernel table says it all
    ftime, fflops, fbytes = _fmt()
    total = sum(k.time_s for k in arch.kernels) or 1.0
    ranked = sorted(mine, key=lambda r: (-r.time_s[arch.arch], r.name))[:top]
    label = "op" if what == "op type" else "module"
    extra = "; a module includes its submodules" if what == "module" else ""
    cells = [
        f"{r.kernels:>7} {ftime(r.time_s[arch.arch]):>10} {r.time_s[arch.arch] / total:6.1%} "
        f"{fflops(r.flops):>11} {fbytes(r.bytes):>9}  {r.bottleneck[arch.arch]}"
        for r in ranked
    ]
    cols = (f"{label} {'kernels':>7} {'bound':>10} {'share':>6} {'FLOPs':>11} {'bytes':>9}  "
            "bottleneck")
    title = f"  by {what}: {len(ranked)} of {len(mine)} by unfused bound{extra}:"
    # module paths come from user code (`add_module` takes any name): escaped for one line
    names = [printable(r.name) or "(top level)" for r in ranked]
    return [title, *_table(cols, names, cells, 36)]


def precision_hint(arch: ArchBounds) -> list[str]:
    """``--precision bf16`` with the bounds it gives, when it moves one by at least
    `HINT_MIN_GAIN` (Note [Hints that move the bound])."""
    what_if = arch.bf16_bounds_s
    if arch.precision_policy in _LOW_PRECISION or not what_if:
        return []
    ftime, _, _ = _fmt()
    now = {b.model: b.time_s for b in arch.bounds}
    gains = [(name, now[name], what_if[name]) for name in ("fused", "unfused")
             if now.get(name, 0.0) > 0 and name in what_if
             and (now[name] - what_if[name]) / now[name] >= HINT_MIN_GAIN]
    if not gains:
        return []
    unfused = now.get("unfused") or 1.0
    share = sum(k.time_s for k in arch.kernels if _fp32_tensor(k)) / unfused
    moves = ", ".join(f"{name} <= {ftime(new)} (-{(old - new) / old:.0%})"
                      for name, old, new in gains)
    if share < 0.005:  # nothing runs on an fp32 tensor pipe: only the bytes move
        return [
            "  hint: cast to bf16: fp32 tensors at 2 bytes (the program has no fp32 matmul "
            "or convolution);",
            f"        --precision bf16 bounds: {moves}",
        ]
    return [
        f"  hint: cast to bf16: fp32/TF32 matmuls and convolutions ({share:.0%} of the unfused "
        "bound)",
        "        at the bf16 tensor peak, fp32 tensors at 2 bytes;",
        f"        --precision bf16 bounds: {moves}",
    ]


def column_notes(arch: ArchBounds) -> list[str]:
    """What the bounds table's ``memory`` and ``AI F/B`` columns are where they are
    not DRAM figures: the L2 term when it exceeds DRAM time, FLOPs per L2 byte when a
    row moves no DRAM byte."""
    l2_memory = []
    l2_intensity = []
    bw = arch.dram_bandwidth_bytes_per_s
    for b in arch.bounds:
        if bw > 0 and b.memory_time_s > b.dram_bytes / bw * 1.001:
            l2_memory.append(b.model)
        if b.dram_bytes == 0 and b.l2_bytes > 0:
            l2_intensity.append(b.model)
    lines = []
    if l2_memory:
        lines.append(
            f"  memory column: the L2 term (bytes at L2 bandwidth) for {', '.join(l2_memory)}; "
            "it exceeds the DRAM term"
        )
    if l2_intensity:
        lines.append(
            f"  AI F/B column: FLOPs per L2 byte for {', '.join(l2_intensity)} "
            "(no DRAM bytes)"
        )
    return lines
