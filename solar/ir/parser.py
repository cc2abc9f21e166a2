"""Parse Affine Loop IR text into `Program` nodes.

Contract: ``str -> Program``. The only module that touches ``lark.Tree``. Every
syntax error becomes an `IRSyntaxError` with a span; nothing else escapes. The
result is syntactically valid but unverified: call `verify_program` next.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, get_args

from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError

from solar.diagnostics import IRSyntaxError, SolarError, Source, Span
from solar.ir.grammar import ir_parser
from solar.ir.nodes import (
    COLLECTIVE_KINDS,
    COLLECTIVE_OPS,
    Access,
    Assign,
    Binary,
    BoolLit,
    Call,
    Cast,
    Collective,
    CollectiveKind,
    DType,
    Expr,
    FloatLit,
    For,
    GroupDecl,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    ReduceOp,
    Role,
    SizeDecl,
    Stmt,
    TensorDecl,
    Unary,
)

__all__ = ["parse_expr", "parse_program"]

MAX_IR_BYTES = 64 * 1024 * 1024

MAX_IR_TOKENS = 1_000_000
"""The most tokens `parse_program` accepts (E0106): time and memory of parsing and
verifying grow with the token count (linearly; Lark's parse dominates), so this bounds
them (the figures are in docs/reliability.md). About 100,000 one-line statements."""

_TOKEN_RE = re.compile(r"[\w.]+|[^\s\w]")

# The grammar's keywords as the IR's closed types (H3): a table, not a cast.
_ROLES: Final[Mapping[str, Role]] = {r: r for r in get_args(Role)}
_REDUCE_OPS: Final[Mapping[str, ReduceOp]] = {f"{op}=": op for op in get_args(ReduceOp)}
_COLLECTIVE_KINDS: Final[Mapping[str, CollectiveKind]] = {k: k for k in COLLECTIVE_KINDS}

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}

# Readable spellings of lark terminal names in "expected ..." lists.
_TOKEN_TEXT = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a float",
    "REDUCE_OP": "`+=`, `*=`, `max=` or `min=`",
    "$END": "end of input",
}


def _span_of(source: Source, meta: Any) -> Span | None:
    if getattr(meta, "empty", True):
        return None
    return Span(source, meta.start_pos, meta.end_pos)


@v_args(inline=True, meta=True)
class _ToAst(Transformer[Token, Program]):
    """Build frozen IR nodes from the parse tree, attaching spans."""

    def __init__(self, source: Source) -> None:
        super().__init__()
        self.source = source

    def _span(self, meta: Any) -> Span | None:
        return _span_of(self.source, meta)

    # ---- program structure -------------------------------------------------
    def program(self, meta: Any, version: int, name: Token, *items: Any) -> Program:
        world = items[0] if items and isinstance(items[0], _World) else None
        sizes = tuple(i for i in items if isinstance(i, SizeDecl))
        if world is not None:
            sizes = (world.decl, *sizes)
        tensors = tuple(i for i in items if isinstance(i, TensorDecl))
        kernels = tuple(i for i in items if isinstance(i, Kernel))
        groups = tuple(i for i in items if isinstance(i, GroupDecl))
        return Program(
            str(name),
            sizes,
            tensors,
            kernels,
            version,
            world=world.decl.name if world is not None else None,
            groups=groups,
            span=self._span(meta),
        )

    def world_decl(self, meta: Any, name: Token, value: Expr) -> _World:
        return _World(SizeDecl(str(name), value, span=self._span(meta)))

    def group_decl(self, meta: Any, name: Token, key: Expr) -> GroupDecl:
        return GroupDecl(str(name), key, span=self._span(meta))

    def version(self, meta: Any, tok: Token) -> int:
        return self._int(meta, tok)

    def size_decl(self, meta: Any, name: Token, value: Expr) -> SizeDecl:
        return SizeDecl(str(name), value, span=self._span(meta))

    def role(self, meta: Any, tok: Token) -> Role:
        return _ROLES[str(tok)]

    def dtype(self, meta: Any, tok: Token) -> DType:
        return DType(str(tok))

    def shape(self, meta: Any, *dims: Expr) -> tuple[Expr, ...]:
        return dims

    def tensor_decl(
        self, meta: Any, role: Role, name: Token, dtype: DType, shape: tuple[Expr, ...]
    ) -> TensorDecl:
        return TensorDecl(str(name), role, dtype, shape, span=self._span(meta))

    def local_decl(
        self, meta: Any, name: Token, dtype: DType, shape: tuple[Expr, ...]
    ) -> TensorDecl:
        return TensorDecl(str(name), "local", dtype, shape, span=self._span(meta))

    def kernel(self, meta: Any, name: Token, *items: Any) -> Kernel:
        local_decls = tuple(i for i in items if isinstance(i, TensorDecl))
        body = tuple(i for i in items if not isinstance(i, TensorDecl))
        return Kernel(str(name), local_decls, body, span=self._span(meta))

    def alias_kernel(self, meta: Any, name: Token, *items: Any) -> Kernel:
        local_decls = tuple(i for i in items if isinstance(i, TensorDecl))
        body = tuple(i for i in items if not isinstance(i, TensorDecl))
        return Kernel(str(name), local_decls, body, alias=True, span=self._span(meta))

    def inplace_kernel(self, meta: Any, name: Token, *items: Any) -> Kernel:
        local_decls = tuple(i for i in items if isinstance(i, TensorDecl))
        body = tuple(i for i in items if not isinstance(i, TensorDecl))
        return Kernel(str(name), local_decls, body, inplace=True, span=self._span(meta))

    def collective_kernel(self, meta: Any, name: Token, coll: Collective) -> Kernel:
        return Kernel(str(name), (), (), collective=coll, span=self._span(meta))

    def coll_arg(self, meta: Any, key: Token, value: Expr) -> tuple[Token, Expr]:
        return key, value

    def collective(
        self, meta: Any, target: Token, kind: Token, source: Token, *args: tuple[Token, Expr]
    ) -> Collective:
        span = self._span(meta)
        chosen = _COLLECTIVE_KINDS.get(str(kind))
        if chosen is None:
            raise IRSyntaxError(
                f"unknown collective `{kind}`; collectives are: {', '.join(COLLECTIVE_KINDS)}",
                code="E0150",
                span=_token_span(self.source, kind) or span,
            )
        fields: dict[str, Any] = {}
        for key, value in args:
            if str(key) in fields:
                where = _token_span(self.source, key)
                raise IRSyntaxError(f"argument `{key}` given twice", code="E0150", span=where)
            fields[str(key)] = self._coll_value(key, value)
        return Collective(chosen, str(target), str(source), **fields, span=span)

    def _coll_value(self, key: Token, value: Expr) -> object:
        """One keyword argument of a collective, checked for its form (not its meaning)."""
        where = _token_span(self.source, key)
        if str(key) in ("op", "group"):
            if not isinstance(value, Name) or (
                str(key) == "op" and value.name not in COLLECTIVE_OPS
            ):
                wanted = ", ".join(COLLECTIVE_OPS) if str(key) == "op" else "a group name"
                raise IRSyntaxError(
                    f"`{key}=` takes {wanted}", code="E0150", span=value.span or where
                )
            return value.name
        if str(key) in ("dim", "split", "concat", "root"):
            if not isinstance(value, IntLit):
                raise IRSyntaxError(
                    f"`{key}=` takes an integer literal", code="E0150", span=value.span or where
                )
            return value.value
        if str(key) == "to":
            return value
        raise IRSyntaxError(
            f"unknown collective argument `{key}`; arguments are: "
            "op, dim, split, concat, root, to, group",
            code="E0150",
            span=where,
        )

    # ---- statements ---------------------------------------------------------
    def assign(self, meta: Any, target: Access, value: Expr) -> Assign:
        return Assign(target, value, span=self._span(meta))

    def reduce(self, meta: Any, target: Access, op: Token, value: Expr) -> Reduce:
        return Reduce(target, _REDUCE_OPS[str(op)], value, span=self._span(meta))

    def step(self, meta: Any, tok: Token) -> int:
        return int(tok)

    def block(self, meta: Any, *stmts: Stmt) -> tuple[Stmt, ...]:
        return stmts

    def _loop(self, meta: Any, args: tuple[Any, ...], *, seq: bool) -> For:
        var, lo, hi, *rest = args
        body = rest[-1]
        step = rest[0] if len(rest) == 2 else 1
        return For(str(var), lo, hi, body, step=step, seq=seq, span=self._span(meta))

    def for_stmt(self, meta: Any, *args: Any) -> For:
        return self._loop(meta, args, seq=False)

    def seq_for_stmt(self, meta: Any, *args: Any) -> For:
        return self._loop(meta, args, seq=True)

    def if_stmt(self, meta: Any, cond: Expr, body: tuple[Stmt, ...]) -> If:
        return If(cond, body, span=self._span(meta))

    # ---- expressions --------------------------------------------------------
    def _binary(self, op: str, meta: Any, lhs: Expr, rhs: Expr) -> Binary:
        return Binary(op, lhs, rhs, span=self._span(meta))

    def or_op(self, meta: Any, lhs: Expr, rhs: Expr) -> Binary:
        return self._binary("or", meta, lhs, rhs)

    def and_op(self, meta: Any, lhs: Expr, rhs: Expr) -> Binary:
        return self._binary("and", meta, lhs, rhs)

    def not_op(self, meta: Any, operand: Expr) -> Unary:
        return Unary("not", operand, span=self._span(meta))

    def neg(self, meta: Any, operand: Expr) -> Unary:
        return Unary("-", operand, span=self._span(meta))

    def lt(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("<", meta, a, b)

    def le(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("<=", meta, a, b)

    def gt(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary(">", meta, a, b)

    def ge(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary(">=", meta, a, b)

    def eq(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("==", meta, a, b)

    def ne(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("!=", meta, a, b)

    def add(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("+", meta, a, b)

    def sub(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("-", meta, a, b)

    def mul(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("*", meta, a, b)

    def div(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("/", meta, a, b)

    def floordiv(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("//", meta, a, b)

    def mod(self, meta: Any, a: Expr, b: Expr) -> Binary:
        return self._binary("%", meta, a, b)

    def int_lit(self, meta: Any, tok: Token) -> IntLit:
        return IntLit(self._int(meta, tok), span=self._span(meta))

    def _int(self, meta: Any, tok: Token) -> int:
        """An integer token's value (the version line's, a literal's).

        Raises:
            IRSyntaxError: E0105 over Python's integer-conversion digit limit.
        """
        try:
            return int(tok)
        except ValueError:
            raise IRSyntaxError(
                f"integer literal of {len(tok)} digits is out of range",
                code="E0105",
                span=self._span(meta),
            ) from None

    def float_lit(self, meta: Any, tok: Token) -> FloatLit:
        value = float(tok)
        if math.isinf(value):
            raise IRSyntaxError(
                f"float literal `{tok}` overflows; write `inf`",
                code="E0105",
                span=self._span(meta),
            )
        return FloatLit(value, span=self._span(meta))

    def inf_lit(self, meta: Any) -> FloatLit:
        return FloatLit(math.inf, span=self._span(meta))

    def nan_lit(self, meta: Any) -> FloatLit:
        return FloatLit(math.nan, span=self._span(meta))

    def true_lit(self, meta: Any) -> BoolLit:
        return BoolLit(True, span=self._span(meta))

    def false_lit(self, meta: Any) -> BoolLit:
        return BoolLit(False, span=self._span(meta))

    def name(self, meta: Any, tok: Token) -> Name:
        return Name(str(tok), span=self._span(meta))

    def access(self, meta: Any, name: Token, *indices: Expr) -> Access:
        return Access(str(name), indices, span=self._span(meta))

    def call(self, meta: Any, name: Token, *args: Expr) -> Call:
        return Call(str(name), args, span=self._span(meta))

    def cast(self, meta: Any, dtype: DType, operand: Expr) -> Cast:
        return Cast(dtype, operand, span=self._span(meta))


class _World:
    """The ``world W = n`` declaration while the program node is being built."""

    def __init__(self, decl: SizeDecl) -> None:
        self.decl = decl


def _token_span(source: Source, tok: Token) -> Span | None:
    if tok.start_pos is None or tok.end_pos is None:
        return None
    return Span(source, tok.start_pos, tok.end_pos)


def _check_brackets(source: Source) -> None:
    """Report the first unbalanced bracket with its own position (E0104)."""
    stack: list[tuple[str, int]] = []
    text = source.text
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "#":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        if ch in _OPENERS:
            stack.append((ch, i))
        elif ch in _CLOSERS:
            if not stack or stack[-1][0] != _CLOSERS[ch]:
                expected = f"`{_OPENERS[stack[-1][0]]}`" if stack else "no closing bracket"
                raise IRSyntaxError(
                    f"unbalanced `{ch}`: expected {expected}",
                    code="E0104",
                    span=Span(source, i, i + 1),
                )
            stack.pop()
        i += 1
    if stack:
        ch, pos = stack[-1]
        raise IRSyntaxError(
            f"unclosed `{ch}`: no matching `{_OPENERS[ch]}` before end of input",
            code="E0104",
            span=Span(source, pos, pos + 1),
        )


def _expected_text(expected: Iterable[object]) -> str:
    parser = ir_parser()
    names = []
    for term in sorted(str(t) for t in expected):
        if term in _TOKEN_TEXT:
            names.append(_TOKEN_TEXT[term])
            continue
        try:
            pattern = parser.get_terminal(term).pattern
        except KeyError:
            names.append(term)
            continue
        names.append(f"`{pattern.value}`" if pattern.type == "str" else term.lower())
    uniq = sorted(set(names))
    if len(uniq) > 6:
        uniq = [*uniq[:6], "..."]
    return ", ".join(uniq)


def _translate(err: UnexpectedInput, source: Source) -> IRSyntaxError:
    if isinstance(err, UnexpectedEOF):
        end = len(source.text)
        return IRSyntaxError(
            f"unexpected end of input; expected {_expected_text(err.expected)}",
            code="E0103",
            span=Span(source, max(0, end - 1), end),
        )
    if isinstance(err, UnexpectedCharacters):
        pos = err.pos_in_stream or 0
        return IRSyntaxError(
            f"unexpected character `{source.text[pos]}`",
            code="E0101",
            span=Span(source, pos, pos + 1),
        )
    token = getattr(err, "token", None)
    expected: Iterable[object] = getattr(err, "expected", set()) or getattr(err, "allowed", set())
    if token is None or token.type == "$END":
        end = len(source.text)
        return IRSyntaxError(
            f"unexpected end of input; expected {_expected_text(expected)}",
            code="E0103",
            span=Span(source, max(0, end - 1), end),
        )
    start = token.start_pos if token.start_pos is not None else 0
    end_pos = token.end_pos if token.end_pos is not None else start + 1
    return IRSyntaxError(
        f"unexpected `{token}`; expected {_expected_text(expected)}",
        code="E0102",
        span=Span(source, start, end_pos),
    )


def _parse(text: str, filename: str) -> tuple[Source, Any]:
    source = Source(filename, text)
    if len(text.encode("utf-8", errors="replace")) > MAX_IR_BYTES:
        raise IRSyntaxError(
            f"IR text is larger than {MAX_IR_BYTES // (1024 * 1024)} MiB", code="E0106"
        )
    if _more_tokens_than(text, MAX_IR_TOKENS):
        raise IRSyntaxError(
            f"IR text has more than {MAX_IR_TOKENS:,} tokens; SOLAR parses and verifies "
            "at most that many",
            code="E0106",
            notes=(
                "parsing costs about 0.5 KB of memory and 50 µs per token "
                "(docs/reliability.md); split the program",
            ),
        )
    _check_brackets(source)
    try:
        return source, ir_parser().parse(text)
    except UnexpectedInput as err:
        raise _translate(err, source) from None


def _more_tokens_than(text: str, limit: int) -> bool:
    """Whether ``text`` holds more than ``limit`` tokens (words, numbers, symbols).

    A linear scan that stops at the limit: it over-counts a little (comments, ``+=`` as
    two), which only makes the check stricter.
    """
    if len(text) <= limit:  # every token is at least one character
        return False
    beyond = itertools.islice(_TOKEN_RE.finditer(text), limit, None)
    return next(beyond, None) is not None


def _too_deep() -> IRSyntaxError:
    # The tree transform recurses once per nesting level (a long `a + b + ...` chain
    # nests too); Python's stack bounds it, so report it instead of crashing.
    return IRSyntaxError(
        "expression nested too deeply (split long sums into several statements)",
        code="E0107",
    )


def parse_program(text: str, *, filename: str = "<input>") -> Program:
    """Parse IR text into an (unverified) `Program`.

    Args:
        text: the IR source.
        filename: shown in diagnostics.

    Returns:
        The program, with spans pointing into ``text``.

    Raises:
        IRSyntaxError: the text does not match the grammar (codes E0101-E0107), or a
            collective's operation or arguments are malformed (E0150).
    """
    with _gc_paused():
        return _parse_program(text, filename)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while parsing.

    Note [GC paused while parsing]: parsing allocates millions of small objects (Lark
    trees and tokens, then AST nodes) and frees none until the end, so each of the
    collector's full passes scans an ever larger heap for nothing: on a 50,000-line
    file the parse took 1.5-2x longer with the collector on (benchmarks/parse.py).
    Reference counting still frees everything; the collector resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _parse_program(text: str, filename: str) -> Program:
    source, tree = _parse(text, filename)
    try:
        program = _ToAst(source).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, SolarError):
            raise err.orig_exc from None
        if isinstance(err.orig_exc, RecursionError):
            raise _too_deep() from None
        raise
    except RecursionError:
        raise _too_deep() from None
    assert isinstance(program, Program)
    return program


def parse_expr(text: str) -> Expr:
    """Parse a single expression (convenience for tests and frontends).

    Raises:
        IRSyntaxError: the text is not an expression.
    """
    program = parse_program(
        f"solar-ir 1\nprogram _expr\nsize _e = {text}\n", filename="<expr>"
    )
    if len(program.sizes) != 1:
        raise IRSyntaxError(f"not a single expression: {text!r}", code="E0102")
    return program.sizes[0].value
