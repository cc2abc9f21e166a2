"""Per-rank programs to one SPMD program: group names, destinations, the rank merge.

Contract: both frontends capture a distributed program once per rank (each rank's
collectives name their group by its member ranks) and call `merge_ranks`, which
checks that every rank ran the same program (FrontendError E0550 when a collective's
shapes differ across ranks, E0552 for any other difference but literals that are one
affine expression of ``rank``: `solar.frontends.kit.rank_fit`), fits each ``permute``'s
per-rank destination to one expression of ``rank`` (E0553 when none fits), and
returns the rank-0 program with ``world`` and the groups declared
(docs/distributed.md, "Capturing distributed programs").

A group is an arithmetic progression of ranks, ``base + j * stride`` for ``j <
size`` (one axis of a row-major device mesh); it is named ``g<size>s<stride>`` and
keyed ``rank // (stride * size) * stride + rank % stride`` (E0551 for other groups).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solar.diagnostics import FrontendError, ValidationMismatchError
from solar.frontends.kit.rank_fit import fit_rank_literals
from solar.ir import (
    RANK,
    Binary,
    Collective,
    Expr,
    GroupDecl,
    IntLit,
    Kernel,
    Name,
    Program,
    SizeDecl,
    group_partition,
    print_collective,
    print_expr,
    print_program,
)

__all__ = [
    "RankContext",
    "current_rank",
    "declared_world_size",
    "fit_destination",
    "group_for",
    "group_key",
    "compare_ranks",
    "merge_ranks",
    "world_size_of",
]


@dataclass(frozen=True, slots=True)
class RankContext:
    """The rank a capture is lowering, and the world it belongs to."""

    rank: int
    world: int


current_rank: ContextVar[RankContext | None] = ContextVar("solar_current_rank", default=None)
"""Set by a distributed capture while it lowers one rank (None otherwise)."""

_GROUP_NAME = re.compile(r"g(\d+)s(\d+)")


def group_for(members: Sequence[int], world: int) -> str | None:
    """The group name of ``members`` (None for the whole world, in rank order).

    Raises:
        FrontendError: the members are not an arithmetic progression (E0551).

    >>> group_for([1, 3], 4), group_for([0, 1, 2, 3], 4), group_for([2, 3], 4)
    ('g2s2', None, 'g2s1')
    """
    ranks = sorted(members)
    if ranks == list(range(world)):
        return None
    stride = ranks[1] - ranks[0] if len(ranks) > 1 else 1
    if stride <= 0 or ranks != list(range(ranks[0], ranks[0] + stride * len(ranks), stride)):
        raise FrontendError(
            f"process group {ranks} is not one axis of a device mesh (ranks base + j * stride)",
            code="E0551",
        )
    return f"g{len(ranks)}s{stride}"


def group_key(name: str, world: int) -> Expr:
    """The key expression of a group named by `group_for`, in a world of ``world`` ranks.

    >>> from solar.ir import print_expr
    >>> print_expr(group_key("g2s1", 4)), print_expr(group_key("g2s2", 8))
    ('rank // 2', 'rank // 4 * 2 + rank % 2')
    >>> print_expr(group_key("g2s2", 4))
    'rank % 2'
    """
    m = _GROUP_NAME.fullmatch(name)
    assert m is not None, name
    size, stride = int(m.group(1)), int(m.group(2))
    rank = Name(RANK)
    if stride == 1:
        return Binary("//", rank, IntLit(size))
    if stride * size == world:
        return Binary("%", rank, IntLit(stride))
    block = Binary("*", Binary("//", rank, IntLit(stride * size)), IntLit(stride))
    return Binary("+", block, Binary("%", rank, IntLit(stride)))


def _ring(k: int, stride: int, size: int) -> Expr:
    """``rank // (s n) * (s n) + (rank + k s) % (s n)``: a shift by ``k`` along an axis."""
    span = stride * size
    rank = Name(RANK)
    shifted = Binary("%", Binary("+", rank, IntLit(k * stride)), IntLit(span))
    return Binary("+", Binary("*", Binary("//", rank, IntLit(span)), IntLit(span)), shifted)


def _shift(k: int) -> Expr:
    if k == 0:
        return Name(RANK)
    if k > 0:
        return Binary("+", Name(RANK), IntLit(k))
    return Binary("-", Name(RANK), IntLit(-k))


def fit_destination(dest: Mapping[int, int], world: int, world_name: str | None = None) -> Expr:
    """One expression of ``rank`` giving ``dest[r]`` for every sender ``r`` and a rank
    outside ``0 .. world`` for every other rank. A cyclic shift over the whole world
    is written modulo ``world_name`` when given (so rebinding the world keeps a ring).

    Tried in order: a shift ``rank + k``, then a cyclic shift along one mesh axis.

    Raises:
        FrontendError: no such expression (E0553).

    >>> from solar.ir import print_expr
    >>> print_expr(fit_destination({0: 1, 1: 2, 2: 3, 3: 0}, 4))
    '(rank + 1) % 4'
    >>> print_expr(fit_destination({0: 1, 1: 0, 2: 3, 3: 2}, 4))
    'rank // 2 * 2 + (rank + 1) % 2'
    >>> print_expr(fit_destination({0: 1, 1: 2}, 3))
    'rank + 1'
    """
    from solar.ir import eval_int

    env = {world_name: world} if world_name else {}

    def fits(expr: Expr) -> bool:
        for r in range(world):
            d = eval_int(expr, {**env, RANK: r})
            if dest.get(r, -1) != d and (r in dest or 0 <= d < world):
                return False
        return True

    candidates = [_shift(k) for k in range(-world + 1, world)]
    modulus: Expr = Name(world_name) if world_name else IntLit(world)
    candidates += [Binary("%", _shift(k), modulus) for k in range(1, world)]
    for size in range(2, world + 1):
        if world % size:
            continue
        for stride in range(1, world // size + 1):
            if (world // size) % stride == 0:
                candidates += [_ring(k, stride, size) for k in range(1, size)]
    for expr in candidates:
        if fits(expr):
            return expr
    raise FrontendError(
        f"the ranks' send destinations {dict(sorted(dest.items()))} are not a shift of the "
        "ranks along one mesh axis",
        code="E0553",
    )


def _world_name(program: Program) -> str:
    taken = {s.name for s in program.sizes} | {t.name for t in program.tensors}
    name = "W"
    while name in taken:
        name += "_"
    return name


def merge_ranks(programs: Sequence[Program], destinations: Sequence[Mapping[str, int]]) -> Program:
    """One SPMD program from the programs of ranks ``0 .. len(programs)``.

    Args:
        programs: rank ``r``'s lowered program at ``programs[r]``; its ``permute``
            kernels carry ``to=`` a placeholder (any expression).
        destinations: per rank, ``permute`` kernel name -> the rank it sends to (absent
            where the rank sends nothing).

    Raises:
        FrontendError: E0550 (collective shapes differ across ranks), E0552 (the ranks'
            programs differ otherwise), E0553 (a destination pattern that no expression
            of ``rank`` gives).
    """
    world = len(programs)
    first = programs[0]
    _check_collectives(programs)
    wname = _world_name(first)
    fitted: dict[str, Expr] = {}
    for kernel in first.kernels:
        if kernel.collective is not None and kernel.collective.kind == "permute":
            dest = {r: d[kernel.name] for r, d in enumerate(destinations) if kernel.name in d}
            fitted[kernel.name] = fit_destination(dest, world, wname)
    ranked = [_with_destinations(p, fitted) for p in programs]
    texts = [print_program(p) for p in ranked]
    affine = None if len(set(texts)) == 1 else fit_rank_literals(ranked)
    for rank, text in enumerate(texts[1:], start=1):
        if text != texts[0] and affine is None:
            line = next(
                (a, b)
                for a, b in zip([*texts[0].splitlines(), ""], [*text.splitlines(), ""],
                                strict=False)
                if a != b
            )
            raise FrontendError(
                f"rank {rank} runs a different program than rank 0: `{line[1].strip()}` where "
                f"rank 0 has `{line[0].strip()}`",
                code="E0552",
                notes=("SOLAR captures SPMD programs: every rank runs the same kernels on "
                       "tensors of the same shapes; numbers that differ across ranks must "
                       "be one affine expression a + b * rank",),
            )
    program = affine if affine is not None else ranked[0]
    names = sorted({k.collective.group for k in program.kernels
                    if k.collective is not None and k.collective.group is not None})
    merged = dataclasses.replace(
        program,
        sizes=(SizeDecl(wname, IntLit(world)), *program.sizes),
        world=wname,
        groups=tuple(GroupDecl(n, group_key(n, world)) for n in names),
    )
    for name in names:  # the key must split the world as the process groups did
        parts = group_partition(merged, name, {wname: world})
        if any(len(p) != len(parts[0]) for p in parts):
            raise FrontendError(f"group {name} does not divide the world of {world} ranks",
                                code="E0551")
    return merged


def _with_destinations(program: Program, fitted: Mapping[str, Expr]) -> Program:
    if not fitted:
        return program
    kernels: list[Kernel] = []
    for k in program.kernels:
        if k.name in fitted and k.collective is not None:
            k = dataclasses.replace(k, collective=dataclasses.replace(k.collective,
                                                                      to=fitted[k.name]))
        kernels.append(k)
    return dataclasses.replace(program, kernels=tuple(kernels))


def _check_collectives(programs: Sequence[Program]) -> None:
    def listing(p: Program) -> list[tuple[Collective, tuple[str, ...]]]:
        decls = {t.name: t for t in p.tensors}
        out = []
        for k in p.kernels:
            if k.collective is not None:
                c = k.collective
                shapes = tuple(
                    f"{decls[n].dtype.value}[{', '.join(print_expr(d) for d in decls[n].shape)}]"
                    if n in decls
                    else "?"
                    for n in (c.source, c.target)
                )
                out.append((dataclasses.replace(c, to=None), shapes))
        return out

    base = listing(programs[0])
    for rank, program in enumerate(programs[1:], start=1):
        other = listing(program)
        for (c0, s0), (c1, s1) in zip(base, other, strict=False):
            if c0.kind == c1.kind and s0 != s1:
                raise FrontendError(
                    f"mismatched collective shapes across ranks: `{print_collective(c0)}` "
                    f"moves {' -> '.join(s0)} on rank 0 but {' -> '.join(s1)} on rank {rank}",
                    code="E0550",
                )
        if len(base) != len(other):
            raise FrontendError(
                f"rank 0 launches {len(base)} collectives, rank {rank} {len(other)}",
                code="E0552",
            )


def declared_world_size(path: str | Path) -> int | None:
    """The module-level ``WORLD_SIZE = n`` of a Python file (a positive integer), or None:
    the file is a distributed program for ``n`` ranks."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None  # the frontend reports an unreadable file itself
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "WORLD_SIZE" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) is int
            and node.value.value > 0
        ):
            return node.value.value
    return None


def world_size_of(path: str | Path) -> int:
    """`declared_world_size`, required.

    Raises:
        FrontendError: the file sets no positive integer ``WORLD_SIZE`` (E0554).
    """
    world = declared_world_size(path)
    if world is None:
        raise FrontendError(
            f"{path} sets no `WORLD_SIZE = n` at module level: say how many ranks run it",
            code="E0554",
        )
    return world


def compare_ranks(
    got: Sequence[Mapping[str, np.ndarray]],
    want: Sequence[Mapping[str, np.ndarray]],
    *,
    rtol: float,
    atol: float,
    what: str,
) -> dict[str, float]:
    """The largest absolute error of each output over all ranks (``want[r]``'s outputs).

    Raises:
        ValidationMismatchError: some rank's output differs beyond the tolerance (E0556);
            ``what`` names the real run in the message.
    """
    errors: dict[str, float] = {}
    for rank, (ran, real) in enumerate(zip(got, want, strict=True)):
        for name, value in real.items():
            diff = np.abs(np.asarray(ran[name], np.float64) - np.asarray(value, np.float64))
            errors[name] = max(errors.get(name, 0.0), float(diff.max(initial=0.0)))
            if not np.allclose(ran[name], value, rtol=rtol, atol=atol):
                raise ValidationMismatchError(
                    f"rank {rank}: output `{name}` of the simulated program differs from "
                    f"{what} by up to {float(diff.max()):.3g}",
                    code="E0556",
                )
    return errors
