"""Profiler views of a report: FLOPs, bytes and bound per module and per op type, and
the parameter count.

Contract: pure functions from the report's kernel rows (and the IR program) to report
fields. A kernel's module and op come from its name: the frontends name a kernel
``<module path>_<op>`` with the module path made an identifier (``layer1.0.conv1`` ->
``layer1_0_conv1_conv2d``) and a ``_<k>`` suffix on repeats (Note [Kernel origins]).

Note [Kernel origins]
~~~~~~~~~~~~~~~~~~~~~
Given the dotted module paths the program ran in (the PyTorch capture's module stack;
JAX's name stack), a kernel belongs to the longest path whose identifier form prefixes
its name; the rest, less a repeat suffix, is its op. A kernel outside every module
(``add`` in a ``forward`` that adds two submodules' outputs) counts toward no module;
its op still has a row. A module's row sums every kernel under it, its submodules'
included (fvcore's ``by_module``), so a parent's row is at least the sum of its
children's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from solar.report.schema import ArchBounds, BreakdownRow, KernelRow, Report

if TYPE_CHECKING:
    from solar.frontends.protocol import FrontendResult
    from solar.ir import Program

__all__ = [
    "by_module",
    "by_op_type",
    "kernel_origin",
    "parameter_totals",
    "with_profile",
    "with_sources",
]

_REPEAT = re.compile(r"(_\d+)+$")


def _identifier(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", path).strip("_")


def kernel_origin(name: str, module_paths: Sequence[str]) -> tuple[str, str]:
    """``(module path, op)`` of the kernel ``name`` (Note [Kernel origins]).

    >>> kernel_origin("layer1_0_conv1_conv2d_2", ["layer1", "layer1.0", "layer1.0.conv1"])
    ('layer1.0.conv1', 'conv2d')
    >>> kernel_origin("add", ["layer1"])
    ('', 'add')
    """
    return _Origins(module_paths).of(name)


class _Origins:
    """`kernel_origin` over one list of module paths, for many kernels: each path's
    identifier is made once, and a name looks up its ``_``-delimited prefixes instead of
    scanning every path. The longest path wins, the first of equal lengths."""

    def __init__(self, module_paths: Sequence[str]) -> None:
        self._by_ident: dict[str, tuple[int, int, str]] = {}
        for index, path in enumerate(module_paths):
            ident = _identifier(path)
            rank = (len(path), -index, path)
            if ident and rank[:2] > self._by_ident.get(ident, (-1, 0, ""))[:2]:
                self._by_ident[ident] = rank
        self._seen: dict[str, tuple[str, str]] = {}

    def of(self, name: str) -> tuple[str, str]:
        if name not in self._seen:
            found = [self._by_ident[name[:i]] for i, c in enumerate(name)
                     if c == "_" and name[:i] in self._by_ident]
            best = max(found)[2] if found else ""
            rest = name[len(_identifier(best)) + 1:] if best else name
            self._seen[name] = (best, _REPEAT.sub("", rest) or rest)
        return self._seen[name]


def _rows(groups: Mapping[str, list[tuple[str, KernelRow]]], archs: Sequence[str]
          ) -> tuple[BreakdownRow, ...]:
    rows = []
    for name, members in groups.items():
        first = [k for a, k in members if a == archs[0]]
        time_s: dict[str, float] = {}
        bottleneck: dict[str, str] = {}
        for arch in archs:
            mine = [k for a, k in members if a == arch]
            time_s[arch] = sum(k.time_s for k in mine)
            compute = sum(k.time_s for k in mine if k.bottleneck == "compute")
            bottleneck[arch] = "compute" if compute * 2 > time_s[arch] else "memory"
        rows.append(BreakdownRow.model_validate({
            "name": name,
            "kernels": len(first),
            "flops": sum(k.flops for k in first),
            "bytes": sum(k.bytes for k in first),
            "time_s": time_s,
            "bottleneck": bottleneck,
        }))
    return tuple(sorted(rows, key=lambda r: (-r.time_s[archs[0]], r.name)))


def by_module(archs: Sequence[ArchBounds], module_paths: Sequence[str]
              ) -> tuple[BreakdownRow, ...]:
    """One row per module holding kernels, its submodules' kernels included, slowest
    first on the first device (Note [Kernel origins]).

    >>> from solar.report.schema import KernelRow
    >>> k = KernelRow(name="blk_fc_addmm", flops=2.0, bytes=8.0, unit="tensor",
    ...               precision="tf32", time_s=1e-6, bottleneck="memory",
    ...               arithmetic_intensity_flops_per_byte=0.25)
    >>> a = ArchBounds(arch="H100", display_name="H100", precision_policy="default",
    ...                cache_assumption="warm", peak_flops_per_s={},
    ...                dram_bandwidth_bytes_per_s=1.0, bounds=(), kernels=(k,))
    >>> [(r.name, r.kernels, r.flops) for r in by_module([a], ["blk", "blk.fc"])]
    [('blk', 1, 2.0), ('blk.fc', 1, 2.0)]
    """
    if not archs or not module_paths:
        return ()
    groups: dict[str, list[tuple[str, KernelRow]]] = {}
    origins = _Origins(module_paths)
    for arch in archs:
        for k in arch.kernels:
            path, _ = origins.of(k.name)
            parts = path.split(".") if path else []
            for depth in range(1, len(parts) + 1):
                groups.setdefault(".".join(parts[:depth]), []).append((arch.arch, k))
    return _rows(groups, [a.arch for a in archs])


def by_op_type(archs: Sequence[ArchBounds], module_paths: Sequence[str]
               ) -> tuple[BreakdownRow, ...]:
    """One row per op type (the op each kernel was lowered from), slowest first."""
    if not archs:
        return ()
    groups: dict[str, list[tuple[str, KernelRow]]] = {}
    origins = _Origins(module_paths)
    for arch in archs:
        for k in arch.kernels:
            _, op = origins.of(k.name)
            groups.setdefault(op, []).append((arch.arch, k))
    return _rows(groups, [a.arch for a in archs])


def parameter_totals(program: Program, sizes: Mapping[str, int]) -> tuple[int, int] | None:
    """``(elements, bytes)`` of the program's parameters and buffers at ``sizes``, or
    ``None`` when it declares none or their shapes do not evaluate there."""
    from solar.ir import DTYPE_BYTES
    from solar.ir.traversal import eval_int

    count = nbytes = 0
    params = [t for t in program.tensors if t.role == "param"]
    if not params:
        return None
    for t in params:
        numel = 1
        try:
            for d in t.shape:
                numel *= eval_int(d, sizes)
        except (KeyError, ValueError, ZeroDivisionError):
            return None
        count += numel
        nbytes += numel * DTYPE_BYTES[t.dtype]
    return count, nbytes


def with_sources(archs: Sequence[ArchBounds], sources: Mapping[str, str]
                 ) -> tuple[ArchBounds, ...]:
    """``archs`` with each kernel row's user source line (``kernels[].source``), where
    the frontend knows it."""
    if not sources:
        return tuple(archs)
    return tuple(
        a.model_copy(update={"kernels": tuple(
            k.model_copy(update={"source": sources.get(k.name)}) for k in a.kernels)})
        for a in archs
    )


def with_profile(
    report: Report, front: FrontendResult, program: Program, sizes: Mapping[str, int]
) -> Report:
    """``report`` with its profiler views: per module and per op type (from its kernel
    rows), the parameter count at ``sizes``, the ops its FLOPs check cannot see, and
    each kernel's source line."""
    params = parameter_totals(program, sizes)
    cov = report.coverage
    ind = cov.independent_flops
    if ind is not None and front.uncounted_ops:
        cov = cov.model_copy(update={
            "independent_flops": ind.model_copy(update={"unseen_ops": front.uncounted_ops})
        })
    archs = with_sources(report.archs, dict(front.kernel_sources))
    return report.model_copy(update={
        "archs": archs,
        "modules": by_module(report.archs, front.module_paths),
        "op_types": by_op_type(report.archs, front.module_paths),
        "parameters": None if params is None else params[0],
        "parameter_bytes": None if params is None else params[1],
        "coverage": cov,
    })
