"""Kernel costs: one kernel's lifted leaves to its FLOPs and charged memory traffic.

Contract: ``(Scope, Kernel, Sequence[Leaf]) -> KernelCost``. FLOPs are summed per
(work class, dtype, convolution) group. Traffic is counted per program-level tensor
(kernel locals stay on chip) as distinct elements: the union of the kernel's read
images and of its write images, less the reads of elements the kernel itself wrote
earlier (Note [In-kernel reuse]). Every count is exact or a lower bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from solar.einsum.count import Count
from solar.einsum.graph import EinsumNode, FlopGroup, KernelCost, TensorTraffic, WorkClass
from solar.einsum.image import AccessImage, contains, union_images
from solar.einsum.leaves import Leaf, Scope
from solar.ir import DType, Kernel, Role

__all__ = ["kernel_cost"]

_ZERO = Count.of(0)

_Site: TypeAlias = tuple[EinsumNode, AccessImage]
"""An access image with the node that makes the access."""


def kernel_cost(scope: Scope, kernel: Kernel, ki: int, leaves: Sequence[Leaf]) -> KernelCost:
    """The cost of one kernel from its lifted leaves.

    Args:
        scope: the program's declarations.
        kernel: the kernel.
        ki: its position in the program.
        leaves: its leaves (`solar.einsum.leaves.lift_kernel`).

    Returns:
        FLOPs grouped by work class, dtype and convolution flag; charged traffic per
        program-level tensor it touches, in declaration order; its work class and
        dtype.
    """
    nodes = [lf.node for lf in leaves]
    groups: dict[tuple[WorkClass, DType, bool], Count] = {}
    for n in nodes:
        if not n.flops.is_zero:
            key = (n.work, n.dtype, n.convolution)
            groups[key] = groups.get(key, _ZERO) + n.flops
    flop_groups = tuple(FlopGroup(w, d, c, f) for (w, d, c), f in groups.items())
    local_names = {t.name for t in kernel.locals}
    touched: dict[str, tuple[list[_Site], list[_Site]]] = {}
    for lf in leaves:
        for name, imgs in lf.reads.items():
            touched.setdefault(name, ([], []))[0].extend((lf.node, img) for img in imgs)
        for name, imgs in lf.writes.items():
            touched.setdefault(name, ([], []))[1].extend((lf.node, img) for img in imgs)
    traffic = []
    order = scope.order
    for name in sorted(touched, key=lambda n: order.get(n, -1)):
        decl = scope.decls[name]
        if name in local_names or name not in order:
            continue
        reads, writes = touched[name]
        traffic.append(_traffic(decl.name, decl.role, decl.dtype, reads, writes))
    contraction = [n for n in nodes if n.work == "contraction"]
    unit: WorkClass = "contraction" if contraction else "vector"
    if contraction:
        dtype = contraction[0].dtype
    elif flop_groups:
        dtype = flop_groups[0].dtype
    else:
        written = [t.dtype for t in traffic if not t.written_elems.is_zero]
        dtype = written[0] if written else DType.F32
    return KernelCost(kernel.name, ki, flop_groups, tuple(traffic), unit, dtype)


def _traffic(
    name: str, role: Role, dtype: DType,
    reads: Sequence[_Site],
    writes: Sequence[_Site],
) -> TensorTraffic:
    """Charged traffic of one kernel on one tensor (Note [In-kernel reuse])."""
    all_reads, read_img = union_images([img for _, img in reads])
    written, write_img = union_images([img for _, img in writes])
    charged = all_reads
    if writes and reads:
        # Note [In-kernel reuse]: a read of an element the kernel wrote earlier needs no
        # memory traffic. Reads before any write of the tensor ("early", outside a seq
        # loop that writes it) are charged in full; of the others, at least
        # |reads| - |writes| elements were never written here (0 if every read image
        # lies inside a written image).
        seq_writers = {n.seq_root for n, _ in writes if n.seq_root is not None}
        early_imgs = [
            img for n, img in reads
            if not any(w.index < n.index for w, _ in writes)
            and (n.seq_root is None or n.seq_root not in seq_writers)
        ]
        early, _ = union_images(early_imgs)
        covered = all(any(contains(w, r) for _, w in writes) for _, r in reads)
        rest = _ZERO if covered else (all_reads - written).clamp0()
        if rest.is_zero:
            charged = early
        elif not early_imgs:
            charged = rest
        else:
            charged = early.maximum(rest, exact=False)
    return TensorTraffic(
        name, role, dtype, charged, written, all_reads,
        read_img.key if read_img is not None else None,
        write_img.key if write_img is not None else None,
    )
