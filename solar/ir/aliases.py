"""Alias kernels: the outputs a real program returns as views or aliases of held tensors.

Contract: ``Program -> list[AliasProblem]`` (`alias_problems`, used by the verifier
for E0224) and ``Kernel -> tuple[str, ...]`` (`alias_targets`). An alias
kernel (``alias kernel NAME { ... }``) holds plain copies ``Out[i...] = Src[f(i...)]``
into outputs: the executor runs it (so validation compares the outputs), the bounds
charge nothing for it (Note [Alias kernels] in docs/bounds.md). The rules below make
that reading exact:

* it declares no locals, and every statement is a loop, an affine ``if`` (no tensor
  reads) or an ``=`` whose value is one access of a program-level tensor of the
  target's dtype, with subscripts that read no tensors;
* its targets are ``output`` tensors that no other kernel writes (the whole output is
  the view), and its sources are not written by any alias kernel (no chains);
* alias kernels come after every other kernel, so a source holds its final value,
  as a view of it does when the program returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from solar.diagnostics import Span
from solar.ir.nodes import (
    Access,
    Assign,
    Expr,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    Stmt,
)
from solar.ir.traversal import walk_exprs

__all__ = [
    "AliasProblem",
    "alias_problems",
    "alias_targets",
    "inplace_problems",
    "inplace_source",
]


@dataclass(frozen=True, slots=True)
class AliasProblem:
    """One broken rule of an alias kernel: the message and where."""

    message: str
    span: Span | None


def _leaves(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    for s in body:
        if isinstance(s, For | If):
            yield s
            yield from _leaves(s.body)
        else:
            yield s


def _reads_tensor(*exprs: Expr) -> bool:
    return any(isinstance(e, Access) for x in exprs for e in walk_exprs(x))


def alias_targets(kernel: Kernel) -> tuple[str, ...]:
    """The tensors ``kernel``'s statements write, in first-write order."""
    seen: dict[str, None] = {}
    for s in _leaves(kernel.body):
        if isinstance(s, Assign | Reduce):
            seen.setdefault(s.target.tensor, None)
    return tuple(seen)


def _sources(kernel: Kernel) -> list[str]:
    seen: dict[str, None] = {}
    for s in _leaves(kernel.body):
        if isinstance(s, Assign) and isinstance(s.value, Access):
            seen.setdefault(s.value.tensor, None)
    return list(seen)


def _statement_problems(program: Program, kernel: Kernel) -> Iterator[AliasProblem]:
    roles = {t.name: t for t in program.tensors}
    where = f"alias kernel `{kernel.name}`"
    for s in _leaves(kernel.body):
        match s:
            case For():
                continue
            case If():
                if _reads_tensor(s.cond):
                    yield AliasProblem(f"{where}: an `if` must not read tensors", s.span)
            case Reduce():
                yield AliasProblem(f"{where}: `{s.op}=` is not a copy", s.span)
            case Assign(target=target, value=value):
                out = roles.get(target.tensor)
                if out is None or out.role != "output":
                    yield AliasProblem(
                        f"{where} writes `{target.tensor}`, which is not an output", s.span
                    )
                if not isinstance(value, Access) or _reads_tensor(*value.indices):
                    yield AliasProblem(
                        f"{where}: the value must be one access of a tensor, "
                        "with subscripts that read no tensors",
                        value.span or s.span,
                    )
                    continue
                src = roles.get(value.tensor)
                if src is None:
                    yield AliasProblem(
                        f"{where} reads `{value.tensor}`, which is not a program-level tensor",
                        value.span or s.span,
                    )
                elif out is not None and src.dtype != out.dtype:
                    yield AliasProblem(
                        f"{where} copies {src.dtype.value} `{src.name}` into "
                        f"{out.dtype.value} `{out.name}`: a view keeps its dtype",
                        value.span or s.span,
                    )


def alias_problems(program: Program) -> list[AliasProblem]:
    """Every alias-kernel rule ``program`` breaks (the module docstring), in order."""
    problems: list[AliasProblem] = []
    seen_alias = False
    alias_writes: dict[str, str] = {}
    for kernel in program.kernels:
        if not kernel.alias:
            if seen_alias:
                problems.append(
                    AliasProblem(
                        f"kernel `{kernel.name}` follows an alias kernel; alias kernels come last",
                        kernel.span,
                    )
                )
            continue
        seen_alias = True
        if kernel.locals:
            problems.append(
                AliasProblem(f"alias kernel `{kernel.name}` declares locals", kernel.locals[0].span)
            )
        problems.extend(_statement_problems(program, kernel))
        for name in alias_targets(kernel):
            alias_writes.setdefault(name, kernel.name)
    for kernel in program.kernels:
        for name in alias_targets(kernel):
            if name in alias_writes and alias_writes[name] != kernel.name:
                problems.append(
                    AliasProblem(
                        f"output `{name}` is written by alias kernel `{alias_writes[name]}` "
                        f"and by `{kernel.name}`",
                        kernel.span,
                    )
                )
        if kernel.alias:
            for name in _sources(kernel):
                if name in alias_writes:
                    problems.append(
                        AliasProblem(
                            f"alias kernel `{kernel.name}` reads `{name}`, which alias kernel "
                            f"`{alias_writes[name]}` writes (alias the source instead)",
                            kernel.span,
                        )
                    )
    return problems


def inplace_source(kernel: Kernel, program: Program) -> dict[str, str]:
    """An in-place kernel's ``{destination: source}`` (Note [In-place updates])."""
    out: dict[str, str] = {}
    for s in _leaves(kernel.body):
        if isinstance(s, Assign) and isinstance(s.value, Access):
            out.setdefault(s.target.tensor, s.value.tensor)
    return out


def _inplace_statement_problems(program: Program, kernel: Kernel) -> Iterator[AliasProblem]:
    """An in-place kernel is whole copies ``D[i, j] = S[i, j]`` of an input or parameter S
    into a temp or output D of S's dtype and shape, over plain loops ``0 .. extent``."""
    decls = {t.name: t for t in program.tensors}
    where = f"inplace kernel `{kernel.name}`"
    loops: dict[str, For] = {}
    for s in _leaves(kernel.body):
        if isinstance(s, For):
            loops[s.var] = s
            continue
        if not isinstance(s, Assign) or not isinstance(s.value, Access):
            yield AliasProblem(f"{where}: only loops and whole copies `D[i] = S[i]`", s.span)
            continue
        dst, src = decls.get(s.target.tensor), decls.get(s.value.tensor)
        if (src is None or dst is None or src.role not in ("input", "param")
                or dst.role not in ("temp", "output") or src.dtype != dst.dtype
                or src.shape != dst.shape):
            yield AliasProblem(
                f"{where}: must copy an input or parameter into a temp or output of its "
                "dtype and shape", s.span)
            continue
        idx = s.target.indices
        names = [i.name for i in idx if isinstance(i, Name)]
        whole = (s.value.indices == idx and len(set(names)) == len(idx)
                 and all(n in loops and loops[n].lo == IntLit(0) and loops[n].hi == extent
                         and loops[n].step == 1 for n, extent in zip(names, dst.shape,
                                                                      strict=False)))
        if not whole:
            yield AliasProblem(f"{where}: the copy must cover the whole tensor, element by "
                               "element (`D[i, j] = S[i, j]` over `0 .. extent`)", s.span)


def inplace_problems(program: Program) -> list[AliasProblem]:
    """Every in-place-kernel rule ``program`` breaks (Note [In-place updates]): whole
    copies (`_inplace_statement_problems`); no later kernel reads or writes the source (its
    storage now holds the destination) and no earlier kernel touches the destination."""
    problems: list[AliasProblem] = []
    touched: list[set[str]] = [_touched(k) for k in program.kernels]
    for ki, kernel in enumerate(program.kernels):
        if not kernel.inplace:
            continue
        if kernel.locals:
            problems.append(AliasProblem(f"inplace kernel `{kernel.name}` declares locals",
                                         kernel.locals[0].span))
        problems.extend(_inplace_statement_problems(program, kernel))
        for dst, src in inplace_source(kernel, program).items():
            later = [k.name for k, t in zip(program.kernels[ki + 1:], touched[ki + 1:],
                                            strict=True) if src in t]
            earlier = [k.name for k, t in zip(program.kernels[:ki], touched[:ki],
                                              strict=True) if dst in t]
            if later:
                problems.append(AliasProblem(
                    f"kernel `{later[0]}` uses `{src}` after inplace kernel `{kernel.name}` "
                    f"gave its storage to `{dst}`", kernel.span))
            if earlier:
                problems.append(AliasProblem(
                    f"kernel `{earlier[0]}` uses `{dst}` before inplace kernel "
                    f"`{kernel.name}` creates it", kernel.span))
    return problems


def _touched(kernel: Kernel) -> set[str]:
    out: set[str] = set()
    for s in _leaves(kernel.body):
        if isinstance(s, Assign | Reduce):
            out.add(s.target.tensor)
            exprs: tuple[Expr, ...] = (s.value, *s.target.indices)
        elif isinstance(s, If):
            exprs = (s.cond,)
        else:
            exprs = (s.lo, s.hi)
        out.update(e.tensor for x in exprs for e in walk_exprs(x) if isinstance(e, Access))
    return out
