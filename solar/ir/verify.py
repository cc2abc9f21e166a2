"""Well-formedness of Affine Loop IR programs.

Contract: ``Program -> VerifyInfo``, pure. `verify_program` raises the first
`IRVerifyError` (in source order, declarations before bodies, whole-program checks
last) with a span on the offending token or node; `collect_errors` returns all of
them. Later stages (executor, lifting, bounds) may assume a verified program.
Every pass over the program is linear in its size (the dependence check is
O(n log n)).

Error codes (stable):

=====  ==================================================================================
Code   Meaning
=====  ==================================================================================
E0201  unsupported ``solar-ir`` version
E0202  a name declared twice: sizes, tensors and kernel locals share one namespace;
       kernel names are unique; a loop index may not shadow a size, a tensor or an
       enclosing loop index (sibling loops may reuse a name)
E0203  access to an unknown tensor (or to a size / loop index as if it were a tensor)
E0204  a name used as a value is neither an enclosing loop index nor a size
E0205  number of subscripts differs from the tensor's rank
E0206  non-affine subscript (see "Affine" below); subscripts that read tensors are
       allowed and reported in `VerifyInfo.indirect_accesses`
E0207  loop bound reads a tensor or is not affine in sizes and enclosing loop indices
E0208  loop step is not a positive integer
E0209  shape dimension is not an integer expression of sizes, or is negative at the
       default sizes
E0210  unknown function, or wrong number of arguments
E0211  a boolean is required: ``if`` condition, operands of ``and``/``or``/``not``,
       first argument of ``select``
E0212  an integer is required: subscripts and loop bounds (a float or bool there)
E0213  reduction into a ``bool`` tensor (``+= *= max= min=`` need a numeric dtype)
E0214  write to an ``input`` or ``param`` tensor
E0215  kernel-local tensor used outside its kernel (or a ``local`` role misplaced)
E0216  access provably out of bounds at the default sizes (affine subscripts, no
       enclosing ``if``; a concrete iteration point is given as a note)
E0217  an ``output`` tensor no kernel writes
E0218  loop-carried dependence in a plain (non-``seq``) loop: a read sees an element
       that an assignment (``=`` or a reduction) writes in another iteration at a
       constant shift, so executing the body statement by statement (loop fission,
       as the vectorised executor does) would change the result
E0219  value kind cannot be stored into the target without a cast (float into an
       integer/bool tensor, non-bool into a bool tensor)
E0220  (`resolve_sizes`) binding an unknown or derived size
E0221  a size is not positive, or (`resolve_sizes`, ``--set``) is above 2**63 - 1, the
       largest index an int64 holds
E0222  a size is not an integer expression of earlier sizes (or divides by zero)
E0223  expressions nested too deeply to verify
E0224  an alias kernel breaks a rule of `solar.ir.aliases`: it must only copy (one
       access of a program-level tensor of the target's dtype, no locals) into outputs
       no other kernel writes, read no tensor an alias kernel writes, and come after
       every other kernel
E0225  an inplace kernel breaks a rule of `solar.ir.aliases`: it must only copy whole
       inputs or parameters into temps or outputs of their dtype and shape (no locals),
       no later kernel may use the source, and no earlier kernel the destination
E0250  (`solar.ir.distributed`) a collective in a program without ``world``; the world
       size is not the first size or not an integer literal, or above `MAX_WORLD`; a
       group key that is not an integer expression of ``rank`` and sizes
E0251  a group splits the ranks into groups of unequal sizes (the world size does not
       divide the mesh)
E0252  a collective's target shape is not the result of its kind on the source shape
       over the group size, or source and target dtypes differ
E0253  a collective's arguments: a missing or extra argument for its kind, an unknown
       group, ``root`` outside the group, ``avg`` on integers, ``group`` on ``permute``,
       other statements in a collective kernel
E0254  a ``permute`` whose ``to`` is not an integer expression of ``rank`` and sizes, or
       sends two ranks to one
=====  ==================================================================================

Affine: integer literals, sizes and loop indices combined with ``+``, ``-``, unary
``-``, ``*`` where one factor is loop-invariant (literals and sizes only), ``//``
and ``%`` by a loop-invariant divisor that is positive at the default sizes, and
``min``/``max`` of affine operands.

Dtype rules (value kinds int, float, bool): literals and tensor reads have the
kind of their dtype; names (indices, sizes) are int; ``+ - * // %`` yield float if
either operand is float, else int (bool counts as int); ``/`` yields float;
comparisons, ``and``, ``or``, ``not``, ``isnan`` yield bool; ``abs sign floor
ceil round trunc min max fmod select`` keep their operands' kind; other functions
yield float; a cast yields its dtype.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import assert_never

from solar.diagnostics import IRVerifyError, Span
from solar.ir.affine import DepEntry, Lin, LoopBox, find_carried_shift
from solar.ir.aliases import alias_problems, inplace_problems
from solar.ir.distributed import distributed_problems
from solar.ir.exprcheck import ExprChecker, has_access, needs_cast
from solar.ir.nodes import (
    IR_VERSION,
    RANK,
    Access,
    Assign,
    Binary,
    Call,
    Expr,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    Stmt,
    TensorDecl,
    TensorName,
    Unary,
)
from solar.ir.printer import print_expr
from solar.ir.structure import StructuralKey, kernel_nodes, node_positions, structural_key
from solar.ir.traversal import eval_int, resolve_sizes, walk_exprs

__all__ = ["SUPPORTED_VERSIONS", "VerifyInfo", "collect_errors", "verify_program"]

SUPPORTED_VERSIONS = frozenset({IR_VERSION})


@dataclass(frozen=True, slots=True)
class VerifyInfo:
    """Facts established by verification, for later stages.

    Attributes:
        sizes: the default size binding (`resolve_sizes` with no overrides).
        indirect_accesses: accesses whose subscripts read tensors (gathers,
            embeddings); not affine, so not lifted as plain einsums.
        value_dependent_ifs: ``if`` statements whose condition reads tensors (the
            others are affine guards over indices and sizes).
        writers: for each tensor written anywhere, the kernels writing it in launch order.
    """

    sizes: Mapping[str, int] = field(hash=False)
    indirect_accesses: tuple[Access, ...]
    value_dependent_ifs: tuple[If, ...]
    writers: Mapping[TensorName, tuple[str, ...]] = field(hash=False)


def verify_program(program: Program) -> VerifyInfo:
    """Check that ``program`` is well formed.

    Args:
        program: a parsed or constructed program.

    Returns:
        The facts later stages use (`VerifyInfo`).

    Raises:
        IRVerifyError: the first problem found (codes in this module's docstring).
    """
    checker = _Checker(program, collect=False)
    checker.run()
    assert checker.sizes is not None
    return VerifyInfo(
        sizes=dict(checker.sizes),
        indirect_accesses=tuple(checker.indirect),
        value_dependent_ifs=tuple(checker.value_ifs),
        writers={t: tuple(ks) for t, ks in checker.writers.items()},
    )


def collect_errors(program: Program) -> list[IRVerifyError]:
    """Every problem `verify_program` would find, in the same order (empty if valid).

    Checks that depend on a failed one (e.g. bounds of an access to an unknown
    tensor) are skipped rather than reported twice.
    """
    checker = _Checker(program, collect=True)
    checker.run()
    return checker.errors


def _word_span(span: Span | None, word: str, *, skip: int = 0) -> Span | None:
    """The span of the first whole-word ``word`` inside ``span`` (after ``skip`` chars)."""
    if span is None:
        return None
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])")
    m = pattern.search(span.source.text, span.start + skip, max(span.end, span.start + skip))
    return Span(span.source, m.start(), m.end()) if m else span


def _text_span(
    span: Span | None, pattern: str, after: Span | None, *, group: int = 0
) -> Span | None:
    """The first match of ``pattern`` (or its ``group``) in ``span`` after ``after`` ends."""
    if span is None:
        return None
    start = after.end if after is not None else span.start
    m = re.compile(pattern).search(span.source.text, start, max(span.end, start))
    return Span(span.source, m.start(group), m.end(group)) if m else span


@dataclass(slots=True)
class _Frame:
    """A plain loop being checked: its accesses, for the dependence check."""

    loop: For
    writes: list[DepEntry] = field(default_factory=list)
    reads: list[DepEntry] = field(default_factory=list)


# Note [Verifying identical kernels]
#     A kernel's body checks depend on it only through `structural_key` over the tensors in
#     scope (program tensors and its locals) and on run-wide state that is equal for every
#     kernel: sizes, size and tensor names, the world. So a kernel whose key matches an
#     earlier kernel that passed every check (its name new, its locals declared cleanly)
#     passes too, and adds to the run the same facts under the bijection of names: the
#     tensors it writes, its gathers and value-dependent ifs, by position. Only clean
#     kernels are remembered, so a kernel with an error is always checked itself, and its
#     diagnostics carry its own spans.
@dataclass(frozen=True, slots=True)
class _Facts:
    """What checking a clean kernel adds to the run, by position (Note [Verifying identical
    kernels]): tensors newly written (canonical name indices), gathers and value-dependent
    ifs (indices into `kernel_nodes`)."""

    writes: tuple[int, ...]
    indirect: tuple[int, ...]
    value_ifs: tuple[int, ...]


class _Checker(ExprChecker):
    """One verification run over declarations and statements."""

    def __init__(self, program: Program, *, collect: bool) -> None:
        super().__init__(program, collect=collect)
        self.kernel_names: set[str] = set()
        self.all_size_names = frozenset(s.name for s in program.sizes)
        self.frames: list[_Frame] = []
        self.pos = 0
        self.value_ifs: list[If] = []
        self.writers: dict[str, list[str]] = {}
        self.kernel_writes: list[str] = []  # tensors the current kernel adds to `writers`
        self.seen: dict[StructuralKey, _Facts] = {}

    def run(self) -> None:
        try:
            self._check_header()
            self._check_sizes()
            self._check_decls()
            for kernel in self.program.kernels:
                self._check_kernel(kernel)
            self._check_outputs()
            for problem in alias_problems(self.program):
                self.error("E0224", problem.message, problem.span)
            for problem in inplace_problems(self.program):
                self.error("E0225", problem.message, problem.span)
            for dist in distributed_problems(self.program, self.sizes):
                self.error(dist.code, dist.message, dist.span)
        except RecursionError:
            self.error("E0223", "expressions are nested too deeply to verify", None)

    def _check_header(self) -> None:
        version = self.program.version
        if version in SUPPORTED_VERSIONS:
            return
        span = self.program.span
        if span is not None:
            m = re.compile(r"solar-ir\s+(\d+)").search(span.source.text, span.start)
            span = Span(span.source, m.start(1), m.end(1)) if m else span
        supported = ", ".join(str(v) for v in sorted(SUPPORTED_VERSIONS))
        self.error("E0201", f"unsupported IR version {version}; supported: {supported}", span)

    def _declare(self, name: str, decl_span: Span | None, keyword: str, what: str) -> bool:
        """Check that a size or tensor name is free; report E0202 (at the name) if taken."""
        if name not in self.size_decls and name not in self.declared:
            return True
        prev = self.declared[name].span if name in self.declared else self.size_decls[name]
        notes = (f"`{name}` was first declared at {prev}",) if prev is not None else ()
        span = _word_span(decl_span, name, skip=len(keyword))
        self.error("E0202", f"{what} `{name}` is already declared", span, notes)
        return False

    def _check_sizes(self) -> None:
        env: dict[str, int] = {}
        ok = True
        for decl in self.program.sizes:
            if not self._declare(decl.name, decl.span, "size", "size"):
                ok = False
                continue
            self.size_decls[decl.name] = decl.span
            bad = self._size_expr_problem(decl.value, set(env), earlier=True)
            if bad is not None:
                self.error("E0222", f"size `{decl.name}`: {bad[1]}", bad[0].span or decl.span)
                ok = False
                continue
            try:
                value = eval_int(decl.value, env)
            except ZeroDivisionError:
                self.error("E0222", f"size `{decl.name}` divides by zero", decl.value.span)
                ok = False
                continue
            if value <= 0:
                self.error(
                    "E0221",
                    f"size `{decl.name}` must be positive, got {value}",
                    decl.value.span or decl.span,
                )
                ok = False
                continue
            env[decl.name] = value
        if ok:
            try:
                self.sizes = resolve_sizes(self.program)
            except IRVerifyError as err:  # unreachable if the checks above agree
                self.error(err.code, err.message, err.span)

    def _size_expr_problem(
        self, expr: Expr, allowed: set[str], *, earlier: bool
    ) -> tuple[Expr, str] | None:
        """The first node that makes ``expr`` not an integer expression of ``allowed`` sizes."""
        for e in walk_exprs(expr):
            match e:
                case IntLit() | Unary(op="-"):
                    continue
                case Binary(op="+" | "-" | "*" | "//" | "%"):
                    continue
                case Call(func="min" | "max", args=(_, _)):
                    continue
                case Name(name=n) if n in allowed:
                    continue
                case Name(name=n) if earlier and n in self.all_size_names:
                    return e, f"size `{n}` is used before it is declared"
                case Name(name=n):
                    return e, f"`{n}` is not a size"
                case Access():
                    return e, f"cannot read tensor `{e.tensor}` here; only sizes are allowed"
                case _:
                    return e, f"`{print_expr(e)}` is not an integer expression of sizes"
        return None

    def _check_shape(self, decl: TensorDecl) -> None:
        dims: list[int] = []
        for dim in decl.shape:
            bad = self._size_expr_problem(dim, set(self.size_decls), earlier=False)
            if bad is not None:
                self.error("E0209", f"shape of `{decl.name}`: {bad[1]}", bad[0].span or decl.span)
                self.dims[id(decl)] = None
                return
            if self.sizes is None:
                continue
            try:
                value = eval_int(dim, self.sizes)
            except ZeroDivisionError:
                value = -1
            if value < 0:
                self.error(
                    "E0209",
                    f"dimension `{print_expr(dim)}` of `{decl.name}` is {value} "
                    "at the default sizes",
                    dim.span or decl.span,
                )
                self.dims[id(decl)] = None
                return
            dims.append(value)
        self.dims[id(decl)] = tuple(dims) if self.sizes is not None else None

    def _check_tensor_decl(self, decl: TensorDecl, *, local: bool) -> None:
        if (decl.role == "local") != local:
            where = "inside a kernel" if local else "at program level"
            self.error("E0215", f"tensor `{decl.name}` has role `{decl.role}` {where}", decl.span)
        if self._declare(decl.name, decl.span, decl.role, "tensor"):
            self.tensors[decl.name] = self.declared[decl.name] = decl
        self._check_shape(decl)

    def _check_decls(self) -> None:
        for decl in self.program.tensors:
            self._check_tensor_decl(decl, local=False)
        for kernel in self.program.kernels:
            for decl in kernel.locals:
                self.local_owner.setdefault(decl.name, kernel.name)

    def _check_outputs(self) -> None:
        for decl in self.program.tensors:
            if decl.role == "output" and decl.name not in self.writers:
                self.error(
                    "E0217",
                    f"output `{decl.name}` is never written by any kernel",
                    _word_span(decl.span, decl.name, skip=len(decl.role)),
                )

    def _check_kernel(self, kernel: Kernel) -> None:
        before = len(self.errors)
        if kernel.name in self.kernel_names:
            self.error(
                "E0202",
                f"kernel `{kernel.name}` is already declared",
                _word_span(kernel.span, kernel.name, skip=len("kernel")),
            )
        self.kernel_names.add(kernel.name)
        if kernel.collective is not None:  # checked by `distributed_problems`
            target = kernel.collective.target
            self.writers.setdefault(target, []).append(kernel.name)
            return
        self.kernel = kernel
        if self.program.world is not None:
            self._enter_rank()
        for decl in kernel.locals:
            self._check_tensor_decl(decl, local=True)
        self._check_kernel_body(kernel, clean=len(self.errors) == before)
        for decl in kernel.locals:
            if self.tensors.get(decl.name) is decl:
                del self.tensors[decl.name]
        if self.program.world is not None:
            self.loops.pop()
            del self.scope[RANK]
        self.kernel = None

    def _check_kernel_body(self, kernel: Kernel, *, clean: bool) -> None:
        """Check the body, or replay an identical clean kernel's facts
        (Note [Verifying identical kernels])."""
        key: StructuralKey | None = None
        if clean:
            try:
                key, names = structural_key(self.tensors, kernel)
            except RecursionError:  # the body check reports E0223 at its own place
                key = None
        hit = None if key is None else self.seen.get(key)
        if hit is not None:
            self._replay(kernel, names, hit)
            return
        before = len(self.errors), len(self.indirect), len(self.value_ifs)
        self.kernel_writes = []
        self._check_body(kernel.body)
        if key is None or len(self.errors) != before[0]:
            return
        facts = _Facts(
            tuple(names.index(t) for t in self.kernel_writes),
            *node_positions(kernel, self.indirect[before[1]:], self.value_ifs[before[2]:]),
        )
        self.seen[key] = facts

    def _replay(self, kernel: Kernel, names: tuple[str, ...], facts: _Facts) -> None:
        for i in facts.writes:
            self.writers.setdefault(names[i], []).append(kernel.name)
        if facts.indirect or facts.value_ifs:
            accs, ifs = kernel_nodes(kernel)
            self.indirect.extend(accs[i] for i in facts.indirect)
            self.value_ifs.extend(ifs[i] for i in facts.value_ifs)

    def _enter_rank(self) -> None:
        """Bind ``rank`` like a loop ``for rank in 0 .. W`` around the kernel body."""
        world = self.program.world
        assert world is not None
        rank = For(RANK, IntLit(0), Name(world), ())
        self.scope[RANK] = rank
        lo, hi = self.linear(rank.lo), self.linear(rank.hi)
        self.loops.append(LoopBox(RANK, rank.lo, rank.hi, lo, hi, 1))

    def _check_body(self, body: tuple[Stmt, ...]) -> None:
        for stmt in body:
            match stmt:
                case Assign() | Reduce():
                    self._check_leaf(stmt)
                case For():
                    self._check_for(stmt)
                case If():
                    self._check_if(stmt)
                case _:
                    assert_never(stmt)

    def _check_for(self, loop: For) -> None:
        shadowed = ""
        if loop.var in self.scope:
            shadowed = "an enclosing loop"
        elif loop.var in self.size_decls or loop.var in self.tensor_names:
            shadowed = "a size" if loop.var in self.size_decls else "a tensor"
        if shadowed:
            skip = len("seq for" if loop.seq else "for")
            var_span = _word_span(loop.span, loop.var, skip=skip)
            self.error("E0202", f"loop index `{loop.var}` shadows {shadowed}", var_span)
        lo_lin = self._check_bound(loop.lo)
        hi_lin = self._check_bound(loop.hi)
        if loop.step <= 0:
            span = _text_span(loop.span, r"step\s+(\d+)", loop.hi.span, group=1)
            self.error("E0208", f"loop step must be a positive integer, got {loop.step}", span)
        outer = self.scope.get(loop.var)
        self.scope[loop.var] = loop
        self.loops.append(LoopBox(loop.var, loop.lo, loop.hi, lo_lin, hi_lin, max(1, loop.step)))
        if not loop.seq:
            self.frames.append(_Frame(loop))
        self._check_body(loop.body)
        if not loop.seq:
            self._check_carried(self.frames.pop())
        self.loops.pop()
        if outer is None:
            del self.scope[loop.var]
        else:
            self.scope[loop.var] = outer

    def _check_bound(self, bound: Expr) -> Lin | None:
        kind = self.expr(bound)
        access = has_access(bound)
        if access is not None:
            self.error("E0207", "loop bounds must not read tensors", access.span or bound.span)
            return None
        if kind is None:
            return None
        if kind != "int":
            self.error("E0212", f"loop bound must be an integer, not {kind}", bound.span)
            return None
        bad = self.affine_problem(bound)
        if bad is not None:
            self.error("E0207", f"loop bound is not affine: {bad[1]}", bad[0].span or bound.span)
            return None
        return self.linear(bound)

    def _check_if(self, stmt: If) -> None:
        kind = self.expr(stmt.cond)
        if kind is not None and kind != "bool":
            self.error(
                "E0211", f"`if` condition must be boolean, not {kind}", stmt.cond.span or stmt.span
            )
        reads = [e for e in walk_exprs(stmt.cond) if isinstance(e, Access)]
        if reads:
            self.value_ifs.append(stmt)
            self._record(reads, None)
        self.guards += 1
        self._check_body(stmt.body)
        self.guards -= 1

    def _check_leaf(self, stmt: Assign | Reduce) -> None:
        target = stmt.target
        target_kind = self.access(target, write=True)
        value_kind = self.expr(stmt.value)
        if target_kind == "bool" and isinstance(stmt, Reduce):
            self.error(
                "E0213",
                f"`{stmt.op}=` is not defined for bool tensor `{target.tensor}`",
                _text_span(stmt.span, re.escape(f"{stmt.op}="), target.span),
                ("reduce into an integer tensor, or use `or`/`and` in an assignment",),
            )
        elif needs_cast(value_kind, target_kind):
            decl = self.decl(target.tensor)
            assert decl is not None
            self.error(
                "E0219",
                f"cannot store a {value_kind}-valued expression in `{target.tensor}` "
                f"({decl.dtype.value}) without a cast",
                stmt.value.span or stmt.span,
                (f"write `{decl.dtype.value}(...)` to convert explicitly",),
            )
        if self.kernel is not None:
            kernels = self.writers.setdefault(target.tensor, [])
            if not kernels or kernels[-1] != self.kernel.name:
                kernels.append(self.kernel.name)
                self.kernel_writes.append(target.tensor)
        reads = [e for e in walk_exprs(stmt.value) if isinstance(e, Access)]
        for idx in target.indices:
            reads += [e for e in walk_exprs(idx) if isinstance(e, Access)]
        self._record(reads, target)

    def _record(self, reads: list[Access], write: Access | None) -> None:
        """Note accesses of one statement for the dependence check of enclosing plain loops."""
        self.pos += 1
        if not self.frames:
            return
        forms = self.forms
        entries = [DepEntry(self.pos, a, forms[id(a)]) for a in reads if id(a) in forms]
        w = None
        if write is not None and id(write) in forms:
            w = DepEntry(self.pos, write, forms[id(write)])
        for frame in self.frames:
            frame.reads.extend(entries)
            if w is not None:
                frame.writes.append(w)

    def _check_carried(self, frame: _Frame) -> None:
        loop = frame.loop
        span: int | None = None
        try:
            if self.sizes is not None:
                span = eval_int(loop.hi, self.sizes) - eval_int(loop.lo, self.sizes)
        except (KeyError, ValueError, ZeroDivisionError):
            span = None  # bounds depend on outer loops: assume any shift can meet
        found = find_carried_shift(loop.var, max(1, loop.step), frame.writes, frame.reads, span)
        if found is None:
            return
        read, write, shift = found
        when = "an earlier" if shift < 0 else "a later"
        notes = [f"`{print_expr(write.access)}` is written in {when} iteration"]
        if write.access.span is not None:
            notes[0] += f" ({write.access.span})"
        notes.append(f"mark the loop `seq` (`seq for {loop.var} in ...`) to run it in order")
        self.error(
            "E0218",
            f"loop `{loop.var}` is not `seq`, but `{print_expr(read.access)}` reads an element "
            f"written by another iteration of it",
            read.access.span,
            tuple(notes),
        )
