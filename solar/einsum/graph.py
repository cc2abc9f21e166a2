"""The einsum graph: one node per leaf statement, per-kernel costs, and its printing.

Contract: plain frozen values built by `solar.einsum.lift_to_einsum` from a
verified `Program`. Every count (`Count`) is exact or a lower bound and evaluates
at any size binding; `EinsumGraph.size_env` turns a binding of free sizes into
the full binding counts need (derived sizes included).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from solar.einsum.count import Count
from solar.einsum.domain import Domain
from solar.ir import Access, DType, Expr, Name, Program, ReduceOp, Role, print_expr, resolve_sizes

__all__ = [
    "ContractionInfo",
    "Edge",
    "EinsumGraph",
    "EinsumNode",
    "FlopGroup",
    "KernelCost",
    "NodeKind",
    "NodeAccess",
    "SpillInfo",
    "ProgramTensor",
    "TensorTraffic",
    "WorkClass",
    "einsum_equation",
]

WorkClass: TypeAlias = Literal["contraction", "vector"]
"""``contraction``: a ``+=`` of a product of two tensor reads (tensor-core eligible)."""

NodeKind: TypeAlias = Literal["assign", "reduce", "guard"]
"""``guard``: the evaluation of a value-dependent ``if`` condition."""


@dataclass(frozen=True, slots=True)
class NodeAccess:
    """One tensor access of a node: its index map (subscripts) and direction."""

    tensor: str
    indices: tuple[Expr, ...]
    mode: Literal["read", "write"]


def _subscript_text(e: Expr) -> str:
    return e.name if isinstance(e, Name) else f"({print_expr(e).replace(' ', '')})"


def einsum_equation(inputs: tuple[tuple[Expr, ...], ...], output: tuple[Expr, ...] | None) -> str:
    """Einsum text for index maps; affine subscripts appear in parentheses.

    >>> from solar.ir import parse_expr as p
    >>> x = (p("n"), p("c"), p("h * 2 + r - 1"), p("w * 2 + s - 1"))
    >>> w = (p("k"), p("c"), p("r"), p("s"))
    >>> einsum_equation((x, w), (p("n"), p("k"), p("h"), p("w")))
    'nc(h*2+r-1)(w*2+s-1),kcrs->nkhw'
    >>> einsum_equation(((p("m"), p("k")),), (p("m"),))
    'mk->m'
    """
    groups = [*inputs, *(() if output is None else (output,))]
    names = [e.name for g in groups for e in g if isinstance(e, Name)]
    sep = "" if all(len(n) == 1 for n in names) else ","

    def one(idx: tuple[Expr, ...]) -> str:
        text = sep.join(_subscript_text(e) for e in idx)
        return text if not sep else f"[{text}]"

    lhs = ",".join(one(g) for g in inputs)
    return lhs if output is None else f"{lhs}->{one(output)}"


_NO_FLOPS = Count.of(0)


@dataclass(frozen=True, slots=True)
class EinsumNode:
    """One leaf statement (or value-dependent guard) as an einsum with exact counts.

    Attributes:
        kernel: the kernel's name.
        index: the statement's position in the kernel (pre-order).
        kind: ``assign``, ``reduce`` or ``guard``.
        domain: loops (symbolic bounds, steps) and affine guards.
        value_guarded: under a value-dependent ``if`` (its counts are then 0, a lower bound).
        seq_root: position of the outermost enclosing ``seq`` loop, or None.
        operands: the tensor reads, then the write (none for guards).
        combine: the combined value (the condition, for guards).
        reduce_op: the Reduce operator, or None.
        flops: executed FLOPs (docs/bounds.md, FLOP rules).
        work: contraction or vector.
        dtype: the contraction operands' dtype, else the written dtype.
        convolution: a contraction whose operands index with window sums (``h*s + r``).
        reads: distinct elements read per tensor (with the image's canonical key).
        writes: distinct elements written per tensor.
        repeated_flops: FLOPs of identical work ``flops`` leaves out (Note [Repeated
            work] in docs/bounds.md): what a per-point count (FlopCounterMode's) adds.
    """

    kernel: str
    index: int
    kind: NodeKind
    domain: Domain
    value_guarded: bool
    seq_root: int | None
    operands: tuple[NodeAccess, ...]
    combine: Expr
    reduce_op: ReduceOp | None
    flops: Count
    work: WorkClass
    dtype: DType
    convolution: bool
    reads: tuple[tuple[str, Count, str], ...]
    writes: tuple[tuple[str, Count, str], ...]
    repeated_flops: Count = _NO_FLOPS

    @property
    def equation(self) -> str:
        """The node as an einsum equation, e.g. ``mk,nk->mn``."""
        ins = tuple(o.indices for o in self.operands if o.mode == "read")
        out = [o.indices for o in self.operands if o.mode == "write"]
        return einsum_equation(ins, out[0] if out else None)

    def describe(self) -> str:
        """One line: equation, statement and FLOPs."""
        target = [o for o in self.operands if o.mode == "write"]
        if target:
            lhs = print_expr(Access(target[0].tensor, target[0].indices))
            op = f"{self.reduce_op}=" if self.reduce_op else "="
            stmt = f"{lhs} {op} {print_expr(self.combine)}"
        else:
            stmt = f"if {print_expr(self.combine)}"
        guards = [print_expr(g) for g in self.domain.guards]
        where = f"  where {' and '.join(guards)}" if guards else ""
        return f"{self.equation}  |  {stmt}{where}  |  flops {self.flops.formula}"


@dataclass(frozen=True, slots=True)
class FlopGroup:
    """FLOPs of one kind of work in a kernel."""

    work: WorkClass
    dtype: DType
    convolution: bool
    flops: Count


@dataclass(frozen=True, slots=True)
class TensorTraffic:
    """A kernel's traffic on one program-level tensor, in distinct elements.

    Attributes:
        tensor: the tensor.
        role: its role.
        dtype: its dtype.
        read_elems: elements the kernel must read from memory (reads of elements the
            kernel itself wrote earlier are not charged; docs/bounds.md "Byte rules").
        written_elems: distinct elements written.
        raw_read_elems: distinct elements read (union of all reads).
        read_key: canonical key of the read image when all reads share one map/domain.
        write_key: likewise for writes.
    """

    tensor: str
    role: Role
    dtype: DType
    read_elems: Count
    written_elems: Count
    raw_read_elems: Count
    read_key: str | None
    write_key: str | None

    @property
    def read_bytes(self) -> Count:
        """Bytes read."""
        return self.read_elems * self.dtype.itemsize_bytes

    @property
    def written_bytes(self) -> Count:
        """Bytes written."""
        return self.written_elems * self.dtype.itemsize_bytes


@dataclass(frozen=True, slots=True)
class KernelCost:
    """Aggregated cost of one kernel (one launch).

    Attributes:
        name: kernel name.
        index: launch position.
        flop_groups: FLOPs split by work class and dtype.
        traffic: traffic per program-level tensor (kernel-local tensors excluded).
        unit: ``contraction`` if any statement is a contraction, else ``vector``.
        dtype: the contraction operands' dtype, else the first vector group's dtype.
        alias: an alias kernel (Note [Alias kernels] in docs/bounds.md): no launch, so
            no FLOPs and no traffic.
    """

    name: str
    index: int
    flop_groups: tuple[FlopGroup, ...]
    traffic: tuple[TensorTraffic, ...]
    unit: WorkClass
    dtype: DType
    alias: bool = False

    @property
    def flops(self) -> Count:
        """All FLOPs of the kernel."""
        return Count.total(g.flops for g in self.flop_groups)

    @property
    def bytes_read(self) -> Count:
        """Bytes read from program-level tensors."""
        return Count.total(t.read_bytes for t in self.traffic)

    @property
    def bytes_written(self) -> Count:
        """Bytes written to program-level tensors."""
        return Count.total(t.written_bytes for t in self.traffic)

    @property
    def bytes(self) -> Count:
        """Bytes read and written."""
        return self.bytes_read + self.bytes_written


@dataclass(frozen=True, slots=True)
class ProgramTensor:
    """A program-level tensor and the traffic any execution must have on it.

    Attributes:
        name: tensor name.
        role: input, param, output or temp.
        dtype: element type.
        elements: elements of its declared shape.
        compulsory_read_elems: distinct elements read by the whole program (inputs,
            params; 0 otherwise).
        compulsory_written_elems: distinct elements written (outputs; for a temp, the
            distinct elements alias kernels read: an output views them; 0 otherwise).
    """

    name: str
    role: Role
    dtype: DType
    elements: Count
    compulsory_read_elems: Count
    compulsory_written_elems: Count


@dataclass(frozen=True, slots=True)
class Edge:
    """``tensor`` written by kernel ``producer`` and read by the later kernel ``consumer``."""

    tensor: str
    producer: str
    consumer: str


@dataclass(frozen=True, slots=True)
class ContractionInfo:
    """A contraction node, and whether the matmul I/O lower bound applies to it.

    Attributes:
        kernel: kernel name.
        node: the node's index in `EinsumGraph.nodes`.
        operands: (A, B, C) tensor names.
        points: multiply-adds executed (|V|).
        output_elems: distinct elements of C.
        itemsize_bytes: smallest itemsize of A, B and C.
        eligible: the red-blue pebble bound of docs/bounds.md applies.
        reason: why not, when not eligible.
    """

    kernel: str
    node: int
    operands: tuple[str, str, str]
    points: Count
    output_elems: Count
    itemsize_bytes: int
    eligible: bool
    reason: str


@dataclass(frozen=True, slots=True)
class SpillInfo:
    """A global reduction over an input that a later statement re-reads element-wise.

    Each group (one reduced value) must be read completely before the consumer can use
    any of its elements; docs/bounds.md "Cache-aware" derives the forced re-reads.

    Attributes:
        tensor: the input read twice.
        reduction: node index of the reduction.
        consumer: node index of the consumer.
        groups: number of independent groups.
        group_elems: elements per group.
        itemsize_bytes: the tensor's itemsize.
    """

    tensor: str
    reduction: int
    consumer: int
    groups: Count
    group_elems: Count
    itemsize_bytes: int


@dataclass(frozen=True, slots=True)
class EinsumGraph:
    """A program lifted to einsum nodes, with per-kernel costs and dataflow edges.

    Attributes:
        program: the source program (for size resolution).
        nodes: every leaf statement, in kernel and statement order.
        kernels: per-kernel aggregated costs, in launch order.
        tensors: program-level tensors with compulsory traffic.
        edges: producer/consumer kernel pairs per tensor.
        contractions: contraction nodes with pebble-bound eligibility.
        spills: provable global-reduction re-reads.
    """

    program: Program
    nodes: tuple[EinsumNode, ...]
    kernels: tuple[KernelCost, ...]
    tensors: tuple[ProgramTensor, ...]
    edges: tuple[Edge, ...]
    contractions: tuple[ContractionInfo, ...]
    spills: tuple[SpillInfo, ...]

    def repeated_flops(self, sizes: Mapping[str, int]) -> float:
        """The FLOPs of repeated identical work the nodes leave out, at ``sizes`` (Note
        [Repeated work]): a per-point counter's figure is SOLAR's plus these."""
        return sum((n.repeated_flops.evaluate(sizes) for n in self.nodes
                    if not n.repeated_flops.is_zero), 0.0)

    @property
    def name(self) -> str:
        """The program's name."""
        return self.program.name

    def size_env(self, sizes: Mapping[str, int] | None = None) -> dict[str, int]:
        """The full size binding (derived sizes included) for a binding of free sizes.

        Raises:
            IRVerifyError: unknown or derived size bound (E0220), non-positive (E0221).
        """
        return resolve_sizes(self.program, sizes)

    def tensor(self, name: str) -> ProgramTensor:
        """The program-level tensor ``name``.

        Raises:
            KeyError: no such program-level tensor.
        """
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def to_text(self) -> str:
        """A deterministic multi-line listing (kernels, nodes, traffic, edges)."""
        out = [f"einsum graph {self.name}: {len(self.kernels)} kernels, {len(self.nodes)} nodes"]
        for k in self.kernels:
            if k.alias:
                out.append(f"kernel {k.name} [alias]: no launch")
                continue
            out.append(f"kernel {k.name} [{k.unit} {k.dtype}] flops {k.flops.formula}")
            for n in self.nodes:
                if n.kernel == k.name:
                    out.append(f"  s{n.index}: {n.describe()}")
            for t in k.traffic:
                out.append(
                    f"  {t.tensor} ({t.role}): read {t.read_elems.formula}, "
                    f"write {t.written_elems.formula}"
                )
        for e in self.edges:
            out.append(f"edge {e.tensor}: {e.producer} -> {e.consumer}")
        defs = {d for n in self.nodes for c in (n.flops,) for d in c.definitions}
        defs |= {
            d for k in self.kernels for t in k.traffic
            for c in (t.read_elems, t.written_elems) for d in c.definitions
        }
        out.extend(f"where {d}" for d in sorted(defs))
        return "\n".join(out) + "\n"
