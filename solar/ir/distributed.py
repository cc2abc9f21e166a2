"""Distributed programs: groups of ranks, collective shape rules, the collective list.

Contract: pure functions over `solar.ir.nodes`. A distributed program (``world W = n``)
runs once per rank ``0 .. W`` with ``rank`` bound (SPMD); `GroupDecl` keys split the
ranks into groups (MPI's ``comm_split`` colour); a collective kernel exchanges one
tensor within each group. `group_partition` evaluates the groups at a size binding,
`collective_shape_problem` is the one shape rule of each collective kind (used by the
verifier and the executor), `distributed_problems` are the verifier's checks (codes
E0250-E0254 in `solar.ir.verify`), and `collectives` lists every collective with its
group and bytes for the distributed bounds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import assert_never

from solar.diagnostics import Span
from solar.ir.nodes import (
    RANK,
    Access,
    Collective,
    CollectiveKind,
    CollectiveOp,
    DType,
    Expr,
    IntLit,
    Kernel,
    Program,
    SizeName,
    TensorDecl,
    TensorName,
)
from solar.ir.printer import print_expr
from solar.ir.traversal import eval_int, resolve_sizes, walk_exprs

__all__ = [
    "MAX_WORLD",
    "CollectiveInfo",
    "DistProblem",
    "collective_shape_problem",
    "collectives",
    "distributed_problems",
    "group_partition",
    "permute_pairs",
]

MAX_WORLD = 1 << 20
"""The largest world size whose groups are enumerated (E0250 above it)."""

_NEEDS: dict[CollectiveKind, frozenset[str]] = {
    "all_reduce": frozenset({"op"}),
    "all_gather": frozenset({"dim"}),
    "reduce_scatter": frozenset({"op", "dim"}),
    "all_to_all": frozenset({"split", "concat"}),
    "broadcast": frozenset({"root"}),
    "permute": frozenset({"to"}),
}
_ARGS = ("op", "dim", "split", "concat", "root", "to", "group")


@dataclass(frozen=True, slots=True)
class DistProblem:
    """One broken rule of a distributed program: its code, message and where."""

    code: str
    message: str
    span: Span | None


@dataclass(frozen=True, slots=True)
class CollectiveInfo:
    """One collective launch as the distributed bounds see it (per rank).

    Attributes:
        kernel: the collective kernel's name.
        kind: the collective (``all_reduce``, ...).
        op: the reduction of ``all_reduce``/``reduce_scatter``, else None.
        dtype: the element type (source and target share it).
        source, target: the tensors sent and received on each rank.
        source_shape, target_shape: their declared shapes (IR expressions of the
            sizes: convert with ``solar.symbolic.to_sympy`` for symbolic counts).
        group: the group's name; None for the whole world.
        groups: every group of the partition (ranks in group order) at the binding.
        group_size: ranks per group (n of the formulas in docs/distributed.md).
        source_bytes, target_bytes: bytes of ``source`` and ``target`` on one rank.
        buffer_bytes: S of the collective formulas, the full buffer: the all-gather's
            output, the reduce-scatter's input, else the input on one rank.
        pairs: ``permute`` only: the (sender, receiver) rank pairs.
    """

    kernel: str
    kind: CollectiveKind
    op: CollectiveOp | None
    dtype: DType
    source: TensorName
    target: TensorName
    source_shape: tuple[Expr, ...]
    target_shape: tuple[Expr, ...]
    group: str | None
    groups: tuple[tuple[int, ...], ...]
    group_size: int
    source_bytes: int
    target_bytes: int
    buffer_bytes: int
    pairs: tuple[tuple[int, int], ...] = ()


def group_partition(
    program: Program, group: str | None, sizes: Mapping[str, int]
) -> tuple[tuple[int, ...], ...]:
    """The groups of ``group`` (None: the world) at ``sizes``, each in rank order.

    Raises:
        KeyError: no group of that name, or the program is not distributed.
        ValueError: the key is not an integer expression of ``rank`` and sizes.
        ZeroDivisionError: the key divides by zero.

    >>> from solar.ir import parse_program
    >>> p = parse_program("solar-ir 1\\nprogram p\\nworld W = 4\\ngroup dp = rank % 2\\n")
    >>> group_partition(p, "dp", {"W": 4})
    ((0, 2), (1, 3))
    """
    if program.world is None:
        raise KeyError(RANK)
    world = sizes[program.world]
    if group is None:
        return (tuple(range(world)),)
    decl = next(g for g in program.groups if g.name == group)
    by_key: dict[int, list[int]] = {}
    env = dict(sizes)
    for rank in range(world):
        env[RANK] = rank
        by_key.setdefault(eval_int(decl.key, env), []).append(rank)
    return tuple(tuple(ranks) for ranks in by_key.values())


def permute_pairs(
    coll: Collective, world: int, sizes: Mapping[str, int]
) -> tuple[tuple[int, int], ...]:
    """The (sender, receiver) pairs of a ``permute``: ranks whose ``to`` lies in the world."""
    assert coll.to is not None
    env = dict(sizes)
    pairs = []
    for rank in range(world):
        env[RANK] = rank
        dest = eval_int(coll.to, env)
        if 0 <= dest < world:
            pairs.append((rank, dest))
    return tuple(pairs)


def _without(shape: Sequence[int], dim: int) -> tuple[int, ...]:
    return tuple(shape[:dim]) + tuple(shape[dim + 1 :])


def collective_shape_problem(
    coll: Collective, source: Sequence[int], target: Sequence[int], n: int
) -> str | None:
    """Why ``target`` is not the result shape of ``coll`` on ``source`` in groups of ``n``.

    ``all_gather`` concatenates along ``dim`` (same rank) or stacks a new axis ``dim``
    (target one rank higher, JAX's untiled form); ``reduce_scatter`` is its converse.

    >>> c = Collective("all_gather", "Y", "X", dim=0)
    >>> collective_shape_problem(c, (3, 4), (6, 4), 2) is None
    True
    >>> collective_shape_problem(c, (3, 4), (3, 4), 2)
    'all_gather of [3, 4] over 2 ranks along dim 0 gives [6, 4] or [2, 3, 4], not [3, 4]'
    """
    src, tgt = tuple(source), tuple(target)
    want = _result_shapes(coll, src, n)
    if isinstance(want, str):
        return want
    if tgt in want:
        return None

    def show(shape: Sequence[int]) -> str:
        return "[" + ", ".join(str(d) for d in shape) + "]"

    what = f"{coll.kind} of {show(src)} over {n} ranks"
    if coll.kind in ("all_gather", "reduce_scatter"):
        what += f" along dim {coll.dim or 0}"
    return f"{what} gives {' or '.join(show(w) for w in want)}, not {show(tgt)}"


def _result_shapes(
    coll: Collective, src: tuple[int, ...], n: int
) -> list[tuple[int, ...]] | str:
    """The target shapes ``coll`` may produce from ``src``, or why there is none."""
    match coll.kind:
        case "all_reduce" | "broadcast" | "permute":
            return [src]
        case "all_gather":
            d = coll.dim or 0
            if not 0 <= d <= len(src):
                return f"dim={d} is outside a rank-{len(src)} source"
            stacked = (*src[:d], n, *src[d:])
            return [(*src[:d], src[d] * n, *src[d + 1 :]), stacked] if d < len(src) else [stacked]
        case "reduce_scatter":
            d = coll.dim or 0
            if not 0 <= d < len(src):
                return f"dim={d} is outside a rank-{len(src)} source"
            if src[d] % n:
                return f"dim {d} of the source ({src[d]}) is not divisible by the {n} ranks"
            shard = (*src[:d], src[d] // n, *src[d + 1 :])
            return [shard, _without(src, d)] if src[d] == n else [shard]
        case "all_to_all":
            s, c = coll.split or 0, coll.concat or 0
            if not (0 <= s < len(src) and 0 <= c < len(src)):
                return f"split={s} or concat={c} is outside a rank-{len(src)} source"
            if src[s] % n:
                return f"dim {s} of the source ({src[s]}) is not divisible by the {n} ranks"
            out = list(src)
            out[s] //= n
            out[c] *= n
            return [tuple(out)]
        case _:
            assert_never(coll.kind)


def distributed_problems(
    program: Program, sizes: Mapping[str, int] | None
) -> list[DistProblem]:
    """The verifier's checks of the world, groups and collective kernels (E0250-E0254).

    ``sizes`` is the default binding, None when the sizes did not resolve (then only
    the checks that need no values run).
    """
    problems: list[DistProblem] = []
    colls = [k for k in program.kernels if k.collective is not None]
    if program.world is None:
        problems += [
            DistProblem("E0250", "a collective needs a distributed program (`world W = n`)",
                        k.span)
            for k in colls
        ]
        return problems
    problems += _world_problems(program)
    if problems or sizes is None:
        return problems
    if sizes[program.world] > MAX_WORLD:
        span = program.sizes[0].span
        msg = f"world size {sizes[program.world]} is above {MAX_WORLD}"
        return [DistProblem("E0250", msg, span)]
    sizes_of: dict[str | None, int] = {None: sizes[program.world]}
    for decl in program.groups:
        try:
            parts = group_partition(program, decl.name, sizes)
        except (ValueError, KeyError, ZeroDivisionError):
            problems.append(
                DistProblem(
                    "E0250",
                    f"group `{decl.name}`: the key must be an integer expression of `rank` "
                    "and sizes",
                    decl.key.span or decl.span,
                )
            )
            continue
        counts = sorted({len(p) for p in parts})
        if len(counts) > 1:
            problems.append(
                DistProblem(
                    "E0251",
                    f"group `{decl.name}` splits the {sizes[program.world]} ranks into groups "
                    f"of unequal sizes {', '.join(map(str, counts))}: the world size does not "
                    "divide the mesh",
                    decl.key.span or decl.span,
                )
            )
            continue
        sizes_of[decl.name] = counts[0]
    for kernel in colls:
        problems += _collective_problems(program, kernel, sizes, sizes_of)
    return problems


def _world_problems(program: Program) -> list[DistProblem]:
    out = []
    first = program.sizes[0] if program.sizes else None
    if first is None or first.name != program.world or not isinstance(first.value, IntLit):
        span = first.span if first is not None else program.span
        msg = f"the world size `{program.world}` must be the first size, a positive integer"
        out.append(DistProblem("E0250", msg, span))
    names = {s.name for s in program.sizes} | {t.name for t in program.tensors}
    names |= {t.name for k in program.kernels for t in k.locals}
    seen: set[str] = set()
    for decl in program.groups:
        if decl.name in names or decl.name in seen:
            out.append(DistProblem("E0202", f"group `{decl.name}` is already declared",
                                   decl.span))
        seen.add(decl.name)
    if RANK in names:
        out.append(DistProblem("E0202", f"`{RANK}` is the rank index of a distributed "
                               "program and cannot be declared", program.span))
    return out


def _collective_problems(
    program: Program,
    kernel: Kernel,
    sizes: Mapping[str, int],
    group_sizes: Mapping[str | None, int],
) -> list[DistProblem]:
    coll = kernel.collective
    assert coll is not None
    span = coll.span or kernel.span
    problem = _form_problem(program, kernel, coll, group_sizes, span)
    if problem is not None:
        return [problem]
    decls = {t.name: t for t in program.tensors}
    src, tgt = decls.get(coll.source), decls.get(coll.target)
    if src is None or tgt is None:
        name = coll.source if src is None else coll.target
        return [DistProblem("E0203", f"collective on `{name}`, which is not a program-level "
                            "tensor", span)]
    problem = _operand_problem(coll, src, tgt, span)
    if problem is None:
        problem = _extent_problem(coll, src, tgt, sizes, group_sizes, span)
    return [] if problem is None else [problem]


def _form_problem(
    program: Program, kernel: Kernel, coll: Collective,
    group_sizes: Mapping[str | None, int], span: Span | None,
) -> DistProblem | None:
    """The collective kernel's shape: alone in its kernel, the arguments of its kind, a
    declared group."""
    if kernel.body or kernel.locals or kernel.alias:
        return DistProblem("E0253", f"collective kernel `{kernel.name}` holds other "
                           "statements or locals", span)
    given = {a for a in _ARGS if getattr(coll, a) is not None} - {"group"}
    needs = _NEEDS[coll.kind]
    if given != needs:
        missing, extra = sorted(needs - given), sorted(given - needs)
        what = "; ".join(
            [f"needs {', '.join(f'`{a}=`' for a in missing)}"] * bool(missing)
            + [f"takes no {', '.join(f'`{a}=`' for a in extra)}"] * bool(extra)
        )
        return DistProblem("E0253", f"{coll.kind} {what}", span)
    if coll.group is not None and coll.group not in group_sizes:
        known = ", ".join(g.name for g in program.groups) or "none declared"
        return DistProblem("E0253", f"unknown group `{coll.group}` (groups: {known})", span)
    if coll.kind == "permute" and coll.group is not None:
        return DistProblem("E0253", "permute takes no `group=`: `to=` names a rank of the "
                           "world", span)
    return None


def _operand_problem(
    coll: Collective, src: TensorDecl, tgt: TensorDecl, span: Span | None
) -> DistProblem | None:
    """What the source and target tensors' roles and dtypes allow."""
    if tgt.role in ("input", "param"):
        return DistProblem("E0214", f"collective writes {tgt.role} `{tgt.name}`", span)
    if src.dtype != tgt.dtype:
        return DistProblem("E0252", f"{coll.kind} from {src.dtype.value} `{src.name}` into "
                           f"{tgt.dtype.value} `{tgt.name}`: the dtypes differ", span)
    if coll.op == "avg" and not src.dtype.is_float:
        return DistProblem("E0253", "op=avg needs a floating-point tensor", span)
    return None


def _extent_problem(
    coll: Collective, src: TensorDecl, tgt: TensorDecl, sizes: Mapping[str, int],
    group_sizes: Mapping[str | None, int], span: Span | None,
) -> DistProblem | None:
    """At the size binding: the root and the permutation within the group, the shapes
    the collective's kind needs."""
    n = group_sizes.get(coll.group)
    if n is None:
        return None  # its group is already reported
    if coll.kind == "broadcast" and not 0 <= (coll.root or 0) < n:
        return DistProblem("E0253", f"root={coll.root} is outside groups of {n} ranks", span)
    if coll.kind == "permute":
        problem = _permute_problem(coll, group_sizes[None], sizes)
        if problem is not None:
            return DistProblem("E0254", problem, coll.to.span if coll.to else span)
    try:
        src_shape = tuple(eval_int(d, sizes) for d in src.shape)
        tgt_shape = tuple(eval_int(d, sizes) for d in tgt.shape)
    except (KeyError, ValueError, ZeroDivisionError):
        return None  # the shapes are reported as E0209
    problem = collective_shape_problem(coll, src_shape, tgt_shape, n)
    if problem is not None:
        return DistProblem("E0252", f"`{tgt.name} = {coll.kind}({src.name}, ...)`: {problem}",
                           span)
    return None


def _permute_problem(coll: Collective, world: int, sizes: Mapping[str, int]) -> str | None:
    assert coll.to is not None
    if any(isinstance(e, Access) for e in walk_exprs(coll.to)):
        return "`to=` must not read tensors"
    try:
        pairs = permute_pairs(coll, world, sizes)
    except (KeyError, ValueError, ZeroDivisionError):
        return f"`to={print_expr(coll.to)}` is not an integer expression of `rank` and sizes"
    receivers: dict[int, int] = {}
    for src, dst in pairs:
        if dst in receivers:
            return (f"ranks {receivers[dst]} and {src} both send to rank {dst}: "
                    f"`to={print_expr(coll.to)}` must be one-to-one")
        receivers[dst] = src
    return None


def collectives(
    program: Program, sizes: Mapping[SizeName, int] | None = None
) -> tuple[CollectiveInfo, ...]:
    """Every collective kernel of a verified program, in launch order.

    Args:
        program: a verified program (a single-device program has none).
        sizes: overrides of free sizes (the world size included); defaults otherwise.

    Raises:
        IRVerifyError: ``sizes`` binds an unknown or derived size (E0220, E0221).

    >>> from solar.ir import parse_program
    >>> p = parse_program('''solar-ir 1
    ... program p
    ... world W = 4
    ... size N = 8
    ... input X : f32[N]
    ... output Y : f32[N]
    ... kernel ar {
    ...   Y = all_reduce(X, op=sum)
    ... }''')
    >>> info, = collectives(p, {"W": 8})
    >>> info.kind, info.group_size, info.buffer_bytes
    ('all_reduce', 8, 32)
    """
    if program.world is None:
        return ()
    world = program.world
    env = resolve_sizes(program, sizes)
    decls = {t.name: t for t in program.tensors}
    out = []
    for kernel in program.kernels:
        coll = kernel.collective
        if coll is None:
            continue
        src, tgt = decls[coll.source], decls[coll.target]
        groups = group_partition(program, coll.group, env)
        item = src.dtype.itemsize_bytes
        src_bytes = _elements(src.shape, env) * item
        tgt_bytes = _elements(tgt.shape, env) * item
        full = {"all_gather": tgt_bytes, "reduce_scatter": src_bytes}.get(coll.kind, src_bytes)
        pairs = permute_pairs(coll, env[world], env) if coll.kind == "permute" else ()
        out.append(
            CollectiveInfo(
                kernel=kernel.name,
                kind=coll.kind,
                op=coll.op,
                dtype=src.dtype,
                source=src.name,
                target=tgt.name,
                source_shape=src.shape,
                target_shape=tgt.shape,
                group=coll.group,
                groups=groups,
                group_size=len(groups[0]),
                source_bytes=src_bytes,
                target_bytes=tgt_bytes,
                buffer_bytes=full,
                pairs=pairs,
            )
        )
    return tuple(out)


def _elements(shape: tuple[Expr, ...], env: Mapping[str, int]) -> int:
    count = 1
    for dim in shape:
        count *= eval_int(dim, env)
    return count
