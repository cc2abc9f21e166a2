"""The Affine Loop IR: nodes, parser, printer, verifier and traversals.

The parser (``parse_program``, ``parse_expr``) is imported on first use: lark and the
``regex`` module it loads cost about 0.15 s, and a traced (torch, jax) program is built
as nodes and never parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from solar.ir.affine import Lin, linear_form
from solar.ir.aliases import alias_problems, alias_targets, inplace_source
from solar.ir.comments import format_program
from solar.ir.distributed import (
    CollectiveInfo,
    collective_shape_problem,
    collectives,
    group_partition,
    permute_pairs,
)
from solar.ir.grammar import grammar_text
from solar.ir.masks import elide_masked_work
from solar.ir.nodes import (
    BINARY_OPS,
    COLLECTIVE_KINDS,
    COLLECTIVE_OPS,
    COMPARISON_OPS,
    DTYPE_BYTES,
    FUNCTIONS,
    IR_VERSION,
    KEYWORDS,
    RANK,
    Access,
    Assign,
    Binary,
    BoolLit,
    Call,
    Cast,
    Collective,
    CollectiveKind,
    CollectiveOp,
    DType,
    Expr,
    FloatLit,
    For,
    GroupDecl,
    If,
    IndexName,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    ReduceOp,
    Role,
    SizeDecl,
    SizeName,
    Stmt,
    TensorDecl,
    TensorName,
    Unary,
    lit,
)
from solar.ir.passes import (
    eliminate_dead_code,
    fill_generated,
    forward_copies,
    merge_duplicate_kernels,
    treat_as_intermediates,
)
from solar.ir.predicates import pred_expr
from solar.ir.printer import print_collective, print_expr, print_program, print_stmt
from solar.ir.traversal import (
    accesses,
    eval_int,
    is_index_condition,
    map_expr,
    map_exprs,
    resolve_sizes,
    sizes_from_shapes,
    walk_exprs,
    walk_stmts,
)
from solar.ir.verify import VerifyInfo, collect_errors, verify_program
from solar.ir.widen import float_dtypes, widen_to_f64

if TYPE_CHECKING:
    from solar.ir.parser import parse_expr, parse_program

__all__ = [
    "Access",
    "Assign",
    "BINARY_OPS",
    "Binary",
    "BoolLit",
    "COLLECTIVE_KINDS",
    "COLLECTIVE_OPS",
    "COMPARISON_OPS",
    "Call",
    "Cast",
    "Collective",
    "CollectiveInfo",
    "CollectiveKind",
    "CollectiveOp",
    "DTYPE_BYTES",
    "DType",
    "Expr",
    "FUNCTIONS",
    "FloatLit",
    "For",
    "GroupDecl",
    "IR_VERSION",
    "If",
    "IndexName",
    "IntLit",
    "KEYWORDS",
    "Kernel",
    "Lin",
    "Name",
    "Program",
    "RANK",
    "Reduce",
    "ReduceOp",
    "Role",
    "SizeDecl",
    "SizeName",
    "Stmt",
    "TensorDecl",
    "TensorName",
    "Unary",
    "VerifyInfo",
    "accesses",
    "alias_problems",
    "alias_targets",
    "collect_errors",
    "collective_shape_problem",
    "collectives",
    "elide_masked_work",
    "eliminate_dead_code",
    "forward_copies",
    "eval_int",
    "fill_generated",
    "float_dtypes",
    "format_program",
    "grammar_text",
    "group_partition",
    "inplace_source",
    "linear_form",
    "lit",
    "is_index_condition",
    "map_expr",
    "map_exprs",
    "merge_duplicate_kernels",
    "parse_expr",
    "parse_program",
    "permute_pairs",
    "pred_expr",
    "print_collective",
    "print_expr",
    "print_program",
    "print_stmt",
    "resolve_sizes",
    "sizes_from_shapes",
    "treat_as_intermediates",
    "verify_program",
    "walk_exprs",
    "walk_stmts",
    "widen_to_f64",
]


def __getattr__(name: str) -> object:
    """``parse_program`` and ``parse_expr``, imported on first use (module docstring)."""
    if name in ("parse_program", "parse_expr"):
        from solar.ir import parser

        return getattr(parser, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
