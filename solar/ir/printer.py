"""Print `Program` nodes as canonical Affine Loop IR text.

Contract: ``Program -> str``. ``print_program(parse_program(t))`` is a fixed point
of ``print_program ∘ parse_program`` and ``parse_program(print_program(p)) == p``
for every program the parser can produce. Parentheses are emitted only where
precedence requires them.
"""

from __future__ import annotations

import math
from typing import assert_never

from solar.ir.nodes import (
    Access,
    Assign,
    Binary,
    BoolLit,
    Call,
    Cast,
    Collective,
    Expr,
    FloatLit,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    Stmt,
    TensorDecl,
    Unary,
)

__all__ = ["print_collective", "print_expr", "print_program", "print_stmt"]

INDENT = "  "

# Precedence levels; higher binds tighter.
_PREC = {
    "or": 1,
    "and": 2,
    "not": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "==": 4,
    "!=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "//": 6,
    "%": 6,
}
_UNARY = 7
_ATOM = 8


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    text = repr(value)
    if "e" not in text and "." not in text:
        text += ".0"
    if "e" in text and "." not in text.split("e")[0]:
        return text  # 1e-05 is a valid FLOAT
    return text


def _prec(expr: Expr) -> int:
    match expr:
        case Binary(op=op):
            return _PREC[op]
        case Unary(op="not"):
            return _PREC["not"]
        case Unary():
            return _UNARY
        case _:
            return _ATOM


def _wrap(expr: Expr, min_prec: int) -> str:
    text = print_expr(expr)
    return f"({text})" if _prec(expr) < min_prec else text


def print_expr(expr: Expr) -> str:
    """Print one expression with minimal parentheses.

    >>> from solar.ir.nodes import Binary, IntLit, Name
    >>> print_expr(Binary("*", Binary("+", Name("i"), IntLit(1)), IntLit(2)))
    '(i + 1) * 2'
    """
    match expr:
        case IntLit() | FloatLit() | BoolLit():
            return _literal_text(expr)
        case Name(name=n):
            return n
        case Access():
            return f"{expr.tensor}[{', '.join(print_expr(i) for i in expr.indices)}]"
        case Unary():
            return _unary_text(expr)
        case Binary():
            return _binary_text(expr)
        case Call(func=f, args=args):
            return f"{f}({', '.join(print_expr(a) for a in args)})"
        case Cast(dtype=d, operand=o):
            return f"{d.value}({print_expr(o)})"
        case _:
            assert_never(expr)


def _literal_text(lit: IntLit | FloatLit | BoolLit) -> str:
    match lit:
        case IntLit(value=v):
            return str(v)
        case FloatLit(value=v):
            return _float_text(v)
        case BoolLit(value=v):
            return "true" if v else "false"
        case _:
            assert_never(lit)


def _unary_text(expr: Unary) -> str:
    if expr.op == "not":
        return f"not {_wrap(expr.operand, _PREC['not'])}"
    inner = _wrap(expr.operand, _UNARY)
    if inner.startswith("-"):
        inner = f"({inner})"
    return f"-{inner}"


def _binary_text(expr: Binary) -> str:
    level = _PREC[expr.op]
    if level == _PREC["<"]:
        # comparisons do not chain: both sides must bind tighter
        return f"{_wrap(expr.lhs, level + 1)} {expr.op} {_wrap(expr.rhs, level + 1)}"
    return f"{_wrap(expr.lhs, level)} {expr.op} {_wrap(expr.rhs, level + 1)}"


def print_stmt(stmt: Stmt, indent: int = 0) -> str:
    """Print one statement (with its nested body) at an indentation level."""
    pad = INDENT * indent
    match stmt:
        case Assign(target=t, value=v):
            return f"{pad}{print_expr(t)} = {print_expr(v)}"
        case Reduce(target=t, op=op, value=v):
            return f"{pad}{print_expr(t)} {op}= {print_expr(v)}"
        case For():
            head = "seq for" if stmt.seq else "for"
            step = f" step {stmt.step}" if stmt.step != 1 else ""
            lines = [
                f"{pad}{head} {stmt.var} in {print_expr(stmt.lo)} .. {print_expr(stmt.hi)}{step} {{"
            ]
            lines += [print_stmt(s, indent + 1) for s in stmt.body]
            lines.append(f"{pad}}}")
            return "\n".join(lines)
        case If(cond=c, body=body):
            lines = [f"{pad}if {print_expr(c)} {{"]
            lines += [print_stmt(s, indent + 1) for s in body]
            lines.append(f"{pad}}}")
            return "\n".join(lines)
        case _:
            assert_never(stmt)


def _print_decl(decl: TensorDecl) -> str:
    dims = ", ".join(print_expr(d) for d in decl.shape)
    return f"{decl.role} {decl.name} : {decl.dtype.value}[{dims}]"


def print_collective(coll: Collective) -> str:
    """Print a collective statement, its arguments in canonical order.

    >>> print_collective(Collective("all_gather", "Y", "X", dim=0, group="tp"))
    'Y = all_gather(X, dim=0, group=tp)'
    """
    args = [coll.source]
    for key in ("op", "dim", "split", "concat", "root"):
        value = getattr(coll, key)
        if value is not None:
            args.append(f"{key}={value}")
    if coll.to is not None:
        args.append(f"to={print_expr(coll.to)}")
    if coll.group is not None:
        args.append(f"group={coll.group}")
    return f"{coll.target} = {coll.kind}({', '.join(args)})"


def _print_kernel(kernel: Kernel) -> str:
    if kernel.collective is not None:
        return f"kernel {kernel.name} {{\n{INDENT}{print_collective(kernel.collective)}\n}}"
    head = "alias kernel" if kernel.alias else "inplace kernel" if kernel.inplace else "kernel"
    lines = [f"{head} {kernel.name} {{"]
    lines += [INDENT + _print_decl(d) for d in kernel.locals]
    lines += [print_stmt(s, 1) for s in kernel.body]
    lines.append("}")
    return "\n".join(lines)


def print_program(program: Program) -> str:
    """Print a whole program canonically (ends with a newline)."""
    sections = [f"solar-ir {program.version}\nprogram {program.name}"]
    sizes = program.sizes
    if program.world is not None and sizes and sizes[0].name == program.world:
        sections[0] += f"\nworld {sizes[0].name} = {print_expr(sizes[0].value)}"
        sizes = sizes[1:]
    if sizes:
        sections.append("\n".join(f"size {s.name} = {print_expr(s.value)}" for s in sizes))
    if program.groups:
        sections.append(
            "\n".join(f"group {g.name} = {print_expr(g.key)}" for g in program.groups)
        )
    if program.tensors:
        sections.append("\n".join(_print_decl(t) for t in program.tensors))
    sections += [_print_kernel(k) for k in program.kernels]
    return "\n\n".join(sections) + "\n"
