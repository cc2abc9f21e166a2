"""Lower a captured jaxpr to an Affine Loop IR `Program`: one kernel per equation.

Contract: ``JaxCapture -> LoweredProgram``. The driver walks the closed jaxpr in order,
inlines call-like equations (``jit``/``pjit``, ``closed_call``, ``custom_jvp_call``,
``custom_vjp_call``, ``remat``), skips dead equations (XLA would too), and hands every
other equation to its registered lowering (`LOWERINGS`), which receives an `EqnCtx` (the
kit's `LowerCtx` with the equation attached) and emits one kernel, or returns a free view.
An equation without a lowering, or one its lowering rejects, is *uncovered* through the
kit's `LoweringDriver`: its kernels are rolled back, its outputs become extra program
inputs (their values come from the reference run, see `solar.frontends.jaxfe.reference`),
the tensors it reads are kept alive, and the coverage (`UncoveredOp`) reports it with its
share of the program's tensor bytes. The result is unverified; run `verify_program` on it.

Naming (`solar.frontends.kit.naming`): ``x0, x1, ...`` for the ``get_inputs()`` arrays,
``p_<path>`` for Flax params, ``y0, y1, ...`` for the flattened outputs, ``c0, c1, ...``
for jaxpr constants and ``u0_<prim>, u1_<prim>, ...`` for outputs of uncovered equations.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from solar.frontends.jaxfe.core import (
    EqnOperand,
    Lit,
    Opaque,
    Value,
    ir_dtype,
    read,
    uint8_inexact,
)
from solar.frontends.jaxfe.sources import (
    eqn_function_scope,
    eqn_source,
    jit_name,
    loop_body_scope,
)
from solar.frontends.jaxfe.walk import (
    inline_args,
    inline_body,
    is_var,
    last_uses,
    live_equations,
    sanitize_scope,
)
from solar.frontends.jaxfe.xla import equation_flops
from solar.frontends.kit import (
    CondRegion,
    KernelBuilder,
    LowerCtx,
    LoweringDriver,
    LoweringTable,
    Nest,
    Sink,
    TensorInfo,
    TensorRef,
    Unsupported,
    UnsupportedOpError,
    sanitize_name,
    shape_numel,
    uncovered_name,
)
from solar.ir import Access, Assign, Binary, DType, Expr, If, Kernel
from solar.training import Phase

__all__ = ["LOWERINGS", "EqnCtx", "Lowerer", "LoweringFn", "NestedSink"]


_CONTROL_FLOW = frozenset({"scan", "while", "cond", "switch"})
"""Primitives whose bodies are lowered whole (Note [What stopped a loop])."""

# Note [What stopped a loop]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A loop body (``scan``, ``while``) or a branch inside one is lowered as one kernel, so one
# equation it cannot lower leaves the whole loop uncovered. The coverage row names the
# loop; the equation that stopped it is in the reason, and the frontend notes carry it to
# the report: "scan uncovered: `gather`: ... (inside its body)", or "no lowering for
# primitive `X`", nested loops naming the innermost.

class NestedSink:
    """Emission into an enclosing loop body: statements go to a list, locals to the kernel."""

    def __init__(self, kb: Sink, stmts: list[Any]) -> None:
        self._kb = kb
        self.stmts = stmts

    def local(self, dtype: DType, shape: Sequence[Expr | int], hint: str = "tmp") -> TensorRef:
        """Declare a local of the enclosing kernel."""
        return self._kb.local(dtype, shape, hint)

    def fresh_vars(self, n: int, hint: str = "i") -> tuple[Any, ...]:
        """Fresh loop variables."""
        return self._kb.fresh_vars(n, hint)

    def emit(self, *stmts: Any) -> None:
        """Append statements to the body."""
        self.stmts.extend(stmts)


def _scope_name(scope: str) -> str:
    """A kernel-name prefix: an identifier, left as it is when it is a keyword of the IR
    (a body function ``step`` names ``step_scan``, not ``step__scan``)."""
    return sanitize_name(scope).rstrip("_")


class Lowerer(LoweringDriver):
    """Walks jaxprs and emits kernels; holds everything the lowerings share.

    Attributes:
        constants: ``(IR name, value)`` of the jaxpr constants declared as parameters.
        cond_regions: the top-level conds lowered so far (see `CondRegion`).
        step_phases: the training-step phase of each equation path
            (`solar.frontends.jaxfe.phases.step_phases`); kernels of backward and
            optimizer equations are named ``backward_<...>`` and ``optimizer_<...>``.
        count_uncovered: give each uncovered equation XLA's FLOPs for it alone
            (`solar.frontends.jaxfe.xla.equation_flops`; one XLA lowering each).
    """

    def __init__(self, name: str, *, strip_root: bool = False) -> None:
        super().__init__(name)
        self.sink: Sink | None = None
        self.guard: Expr | None = None
        self.catch = True
        self.strip_root = strip_root
        self.scope = ""
        self.dotted_scope = ""  # `scope` with its parts joined by dots
        self._functions: tuple[str, ...] = ()  # the calls' functions (Note [JAX kernel names])
        self.constants: list[tuple[str, np.ndarray]] = self.journaled([])
        self.cond_regions: list[CondRegion] = self.journaled([])
        self._consts: dict[int, tuple[Any, Value]] = self.journaled({})
        self._pending: list[KernelBuilder] = []
        self._dest: Mapping[Any, TensorInfo] = {}
        self._live: set[Any] = set()
        self._counter: dict[str, int] = {}
        self._frames: list[_Frame] = []
        self.step_phases: Mapping[tuple[int, ...], Phase] = {}
        self._phase: Phase = "forward"
        self._body_depth = 0
        self.count_uncovered = False
        self.donated: set[str] = set()

    def fresh(self, prefix: str) -> str:
        """A numbered name ``prefix0, prefix1, ...`` not used yet."""
        return f"{prefix}{self._fresh_number(prefix)}"

    def _fresh_number(self, prefix: str) -> int:
        while True:
            k = self._counter.get(prefix, 0)
            self._counter[prefix] = k + 1
            if not self.pb.is_used(f"{prefix}{k}"):
                return k

    def alloc(self, var: Any, shape: Sequence[int], dtype: DType, hint: str) -> TensorInfo:
        """Storage for an equation output: its destination, a local, or a new temp."""
        if is_var(var) and var in self._dest:
            return self._dest[var]
        shape = tuple(shape)
        hint = f"{self.scope}_{hint}" if self.scope else hint
        if self.sink is not None:
            ref = self.sink.local(dtype, shape, f"{hint}_l")
            return TensorInfo(ref, shape, dtype)
        if (not is_var(var) or var not in self._live) and self._pending:
            ref = self._pending[-1].local(dtype, shape, f"{hint}_l")
            return TensorInfo(ref, shape, dtype)
        return self.declare("temp", dtype, shape, f"{hint}_out")

    def start_kernel(self, hint: str) -> Sink:
        """The emission target of the current equation."""
        if self.sink is not None:
            return self.sink
        name = f"{self.scope}_{hint}" if self.scope else hint
        if self._phase != "forward":  # Note [JAX step phases]: named like a PyTorch step's
            name = f"{self._phase}_{name}"
            # the phase is a module of the report, as a PyTorch step's (Note [Kernel origins])
            self.module_paths.add(self._phase)
            if self.dotted_scope:
                self.module_paths.add(f"{self._phase}.{self.dotted_scope}")
        kb = self.pb.kernel(name)
        self._pending.append(kb)
        return kb

    def const_operand(self, value: Any) -> Value:
        """An operand for a jaxpr constant or array literal (declared once per object)."""
        key = id(value)
        if key in self._consts:
            return self._consts[key][1]
        arr = np.asarray(value)
        try:
            dtype = ir_dtype(arr.dtype)
        except UnsupportedOpError:
            return Opaque(tuple(arr.shape), str(arr.dtype))
        op: Value
        if arr.ndim == 0:
            op = Lit(arr.item(), dtype)
        else:
            name = self.fresh("c")
            op = self.declare("param", dtype, arr.shape, name)
            stored = arr.astype(np.float32) if dtype.is_float and arr.dtype.itemsize < 4 else arr
            self.constants.append((name, np.array(stored)))
        self._consts[key] = (value, op)
        return op

    def atom(self, a: Any, env: Mapping[Any, Value]) -> Value:
        """The operand of a jaxpr atom (variable or literal)."""
        if is_var(a):
            return env[a]
        val = a.val
        arr = np.asarray(val)
        if arr.ndim == 0:
            try:
                dtype = ir_dtype(a.aval.dtype)
            except UnsupportedOpError:
                return Opaque((), str(a.aval.dtype))
            value = arr.item()
            if str(a.aval.dtype) == "uint8":
                value = (int(value) + 128) % 256 - 128  # the int8 bits (core.DTYPES)
            return Lit(value, dtype)
        return self.const_operand(val)

    def lower_jaxpr(
        self,
        jaxpr: Any,
        consts: Sequence[Value],
        args: Sequence[Value],
        *,
        dest: Mapping[Any, TensorInfo] | None = None,
        live_out: Sequence[bool] | None = None,
        path: tuple[int, ...] = (),
        pinned: Sequence[Any] = (),
    ) -> list[Value]:
        """Lower every needed equation of ``jaxpr``; return the operands of its outputs.

        ``pinned`` invars stay live to the end (loop-invariant inputs of a loop body).
        """
        env: dict[Any, Value] = {}
        for v, c in zip(jaxpr.constvars, consts, strict=True):
            env[v] = c
        for v, x in zip(jaxpr.invars, args, strict=True):
            env[v] = x
        if live_out is None:
            live_out = [True] * len(jaxpr.outvars)
        needed, live = live_equations(jaxpr, live_out)
        frame = _Frame(env, last_uses(jaxpr, pinned))
        saved = (self._dest, self._live)
        self._dest, self._live = dict(dest or {}), live
        self._frames.append(frame)
        try:
            for n, eqn in enumerate(jaxpr.eqns):
                if n not in needed:
                    continue
                frame.index = n
                ins = [self.atom(a, env) for a in eqn.invars]
                outs = self._lower_one(eqn, ins, (*path, n))
                for v, o in zip(eqn.outvars, outs, strict=True):
                    if is_var(v):
                        env[v] = o
        finally:
            self._dest, self._live = saved
            self._frames.pop()
        # An output whose equation was skipped as dead (the caller does not need it: an
        # inlined call's unused result) has no value; nothing reads it.
        return [
            Opaque(tuple(int(d) for d in v.aval.shape), "dead")
            if is_var(v) and v not in env
            else self.atom(v, env)
            for v in jaxpr.outvars
        ]

    def lower_operands(
        self,
        jaxpr: Any,
        consts: Sequence[Value],
        args: Sequence[Value],
        *,
        dest: Mapping[Any, TensorInfo] | None = None,
        pinned: Sequence[Any] = (),
    ) -> list[EqnOperand]:
        """`lower_jaxpr` for a body whose results must be IR values (loop and branch bodies).

        Raises:
            UnsupportedOpError: a result is not representable (it comes from a PRNG op...).
        """
        self._body_depth += 1  # a body's equations belong to its equation's phase
        try:
            outs = self.lower_jaxpr(jaxpr, consts, args, dest=dest, pinned=pinned)
        finally:
            self._body_depth -= 1
        ops: list[EqnOperand] = []
        for o in outs:
            if isinstance(o, Opaque):
                raise UnsupportedOpError(
                    f"a body result of dtype {o.dtype_name} is not representable"
                )
            ops.append(o)
        return ops

    def reusable(self, x: Value) -> bool:
        """True if ``x``'s storage may be updated in place by the current equation.

        That is XLA's buffer reuse: ``x`` is a whole intermediate (temp or local, not an
        input, parameter, output or destination) that no later equation reads, at this
        level or in any enclosing one.
        """
        if not isinstance(x, TensorInfo) or not x.is_storage:
            return False
        name = x.ref.name
        if any(d.ref.name == name for d in self._dest.values()):
            return False
        decl = self.pb.declaration(name)
        if decl is not None and decl.role != "temp":
            return False
        for frame in self._frames:
            for v, val in frame.env.items():
                if (
                    isinstance(val, TensorInfo)
                    and val.ref.name == name
                    and frame.last_use.get(v, -1) > frame.index
                ):
                    return False
        return True

    def take_donated(self, x: Value) -> TensorInfo | None:
        """Note [In-place updates]: a program input that a ``jit`` donates
        (``donate_argnums``) and no later equation reads, handed to a new temp by an
        inplace kernel, so the current equation may update it in place as XLA does (the
        temp *is* the input's buffer); None otherwise."""
        if (not isinstance(x, TensorInfo) or not x.is_storage or x.ref.name not in self.donated
                or self.sink is not None or self.guard is not None or self._pending):
            return None
        decl = self.pb.declaration(x.ref.name)
        if decl is None or decl.role != "input" or any(
                d.ref.name == x.ref.name for d in self._dest.values()):
            return None
        for frame in self._frames:
            for v, val in frame.env.items():
                if (isinstance(val, TensorInfo) and val.ref.name == x.ref.name
                        and frame.last_use.get(v, -1) > frame.index):
                    return None
        new = self.declare("temp", x.dtype, x.shape, f"{x.ref.name}_donated")
        kb = self.pb.kernel(f"{x.ref.name}_donated")
        kb.inplace = True
        self.copy_into(kb, new, x)
        self.pb.add_kernel(Kernel(kb.name, (), tuple(kb.body), inplace=True))
        return new

    @contextlib.contextmanager
    def _scoped(self, eqn: Any) -> Iterator[None]:
        saved, saved_dotted, saved_source = self.scope, self.dotted_scope, self.pb.source
        saved_functions = self._functions
        self.pb.source = eqn_source(eqn) or saved_source  # Note [JAX kernel sources]
        strip = self.strip_root and not saved
        inner = sanitize_scope(str(eqn.source_info.name_stack), strip)
        if inner:
            self.scope = _scope_name(f"{saved}_{inner}" if saved else inner)
            dotted = sanitize_scope(str(eqn.source_info.name_stack), strip, sep=".")
            self.dotted_scope = f"{saved_dotted}.{dotted}" if saved_dotted else dotted
            self.module_paths.add(self.dotted_scope)
        elif not saved:  # Note [JAX kernel names]
            named, whole = loop_body_scope(eqn) or eqn_function_scope(eqn)
            named = named if whole else (*self._functions, *named)
            if inline_body(eqn) is not None:  # a call: its body's functions start here
                called = jit_name(eqn) if self.pb.source else ""  # not a jitted entry's
                self._functions = (*named, called) if called else named
            elif named:
                self.scope = _scope_name("_".join(named))
                self.dotted_scope = ".".join(named)
                self.module_paths.add(self.dotted_scope)
        try:
            yield
        finally:
            self.scope, self.dotted_scope, self.pb.source = saved, saved_dotted, saved_source
            self._functions = saved_functions

    def _lower_one(self, eqn: Any, ins: Sequence[Value], path: tuple[int, ...]) -> list[Value]:
        body = inline_body(eqn)
        if not self._body_depth:  # a path of the program's walk, not of a loop/branch body
            self._phase = self.step_phases.get(path, "forward")
        with self._scoped(eqn):
            if body is not None:
                jaxpr, consts = body
                for flag, x in zip(eqn.params.get("donated_invars", ()), ins, strict=False):
                    if flag and isinstance(x, TensorInfo):
                        self.donated.add(x.ref.name)
                inner_dest = {
                    iv: self._dest[ov]
                    for iv, ov in zip(jaxpr.outvars, eqn.outvars, strict=True)
                    if is_var(iv) and is_var(ov) and ov in self._dest and iv not in jaxpr.invars
                }
                live_out = [is_var(ov) and ov in self._live for ov in eqn.outvars]
                return self.lower_jaxpr(
                    jaxpr,
                    [self.const_operand(c) for c in consts],
                    inline_args(eqn, ins),
                    dest=inner_dest,
                    live_out=live_out,
                    path=path,
                )
            return self.lower_eqn(eqn, ins, path)

    def lower_eqn(self, eqn: Any, ins: Sequence[Value], path: tuple[int, ...]) -> list[Value]:
        """Lower one non-call equation; uncovered ones become inputs (when allowed)."""
        prim = eqn.primitive.name
        fn = LOWERINGS.find(prim)
        opaque = [x for x in ins if isinstance(x, Opaque)]
        if opaque:
            fn = _opaque_input(opaque[0])
        elif uint8_inexact(eqn):
            fn = _uint8_arithmetic
        if not self.catch:  # inside a loop body: the enclosing op's reason names this one
            if fn is None:
                raise UnsupportedOpError(f"no lowering for primitive `{prim}`")
            try:
                return self._apply(fn, eqn, ins)
            except UnsupportedOpError as err:
                if str(err).startswith(("`", "no lowering for primitive")):
                    raise
                raise UnsupportedOpError(f"`{prim}`: {err}") from err
        nbytes = _eqn_bytes(eqn)
        self.count(nbytes)
        got = (
            self.attempt(lambda: self._apply(fn, eqn, ins))
            if fn is not None
            else Unsupported(f"no lowering for primitive `{prim}`")
        )
        if isinstance(got, Unsupported):
            return self._uncover(eqn, ins, path, got.reason, nbytes)
        self.coverage.lowered += 1
        return got

    def _apply(self, fn: Any, eqn: Any, ins: Sequence[Value]) -> list[Value]:
        saved = self._pending
        self._pending = []
        try:
            ctx = EqnCtx(self, eqn, cast(Sequence[EqnOperand], ins))
            res = fn(ctx)
            outs = [ctx.out(k) for k in range(len(eqn.outvars))] if res is None else list(res)
            for kb in self._pending:
                self.finish_kernel(kb)
        finally:
            self._pending = saved
        return outs

    def finish_kernel(self, kb: KernelBuilder) -> None:
        """Add a kernel to the program (under the current cond guard, if any)."""
        body = tuple(kb.body)
        if self.guard is not None and body:
            body = (If(self.guard, body),)
        self.pb.add_kernel(
            Kernel(kb.name, tuple(kb.locals), body, alias=kb.alias, collective=kb.collective)
        )

    def _uncover(
        self, eqn: Any, ins: Sequence[Value], path: tuple[int, ...], reason: str, nbytes: int
    ) -> list[Value]:
        prim = eqn.primitive.name
        counted = equation_flops(eqn) if self.count_uncovered else None
        self.uncover(prim, nbytes, reason, ins, counted)
        if prim in _CONTROL_FLOW:  # Note [What stopped a loop]
            note = f"{prim} uncovered: {reason} (inside its body)"
            if note not in self.notes:
                self.notes.append(note)
        outs: list[Value] = []
        for k, v in enumerate(eqn.outvars):
            shape = tuple(int(d) for d in v.aval.shape)
            try:
                dtype = ir_dtype(v.aval.dtype)
            except UnsupportedOpError:
                outs.append(Opaque(shape, str(v.aval.dtype)))
                continue
            name = uncovered_name(self._fresh_number("u"), sanitize_name(prim))
            outs.append(self.declare_uncovered(name, dtype, shape, path, k))
        return outs

    @contextlib.contextmanager
    def nested(self, sink: Sink) -> Iterator[None]:
        """Emit into ``sink`` (a loop body) instead of new kernels; no per-equation catch."""
        saved = (self.sink, self.catch)
        self.sink, self.catch = sink, False
        try:
            yield
        finally:
            self.sink, self.catch = saved

    @contextlib.contextmanager
    def guarded(self, cond: Expr) -> Iterator[None]:
        """Emit kernels under a value-dependent guard (a cond branch); no per-equation catch."""
        saved = (self.guard, self.catch)
        # Nested conds: the outer guard comes first, so `and` short-circuits the inner
        # predicate's read when the outer branch did not run.
        combined = cond if self.guard is None else Binary("and", self.guard, cond)
        self.guard, self.catch = combined, False
        try:
            yield
        finally:
            self.guard, self.catch = saved

    def copy_into(self, sink: Sink, dst: TensorInfo, src: EqnOperand) -> None:
        """Emit ``dst[i...] = src[i...]`` over ``dst``'s shape into ``sink``."""
        nest = Nest(sink, dst.shape)
        if nest.empty:
            return
        target = Access(dst.ref.name, dst.storage_index(nest.idx))
        sink.emit(*nest.wrap([Assign(target, read(src, nest.idx))]))


class EqnCtx(LowerCtx):
    """The kit's `LowerCtx` for one jaxpr equation, with the equation's arguments attached.

    Its kernels start through the `Lowerer` (a new kernel, or the enclosing loop body).

    Attributes:
        prim: the primitive name, e.g. ``"dot_general"`` (the context's ``op``).
        params: the equation's parameters.
        ins: the input operands.
        out_avals: ``(shape, dtype-name)`` of every output.
    """

    def __init__(self, lowerer: Lowerer, eqn: Any, ins: Sequence[EqnOperand]) -> None:
        super().__init__(lowerer, eqn.primitive.name)
        self.lowerer = lowerer
        self.eqn = eqn
        self.prim: str = self.op
        self.params: Mapping[str, Any] = eqn.params
        self.ins: tuple[EqnOperand, ...] = tuple(ins)
        self.out_avals: tuple[tuple[tuple[int, ...], str], ...] = tuple(
            (tuple(int(d) for d in v.aval.shape), str(v.aval.dtype)) for v in eqn.outvars
        )
        self._outs: dict[int, TensorInfo] = {}

    @property
    def nested(self) -> bool:
        """True when emitting into an enclosing loop body (scan/while) rather than kernels."""
        return self.lowerer.sink is not None

    def out_shape(self, k: int = 0) -> tuple[int, ...]:
        """Shape of output ``k``."""
        return self.out_avals[k][0]

    def out_dtype(self, k: int = 0) -> DType:
        """IR dtype of output ``k``."""
        return ir_dtype(self.out_avals[k][1])

    def in_dtype(self, k: int) -> DType:
        """IR dtype of input ``k``."""
        return self.ins[k].dtype

    def out(self, k: int = 0) -> TensorInfo:
        """Storage for output ``k`` (declared on first use)."""
        if k not in self._outs:
            self._outs[k] = self.lowerer.alloc(
                self.eqn.outvars[k], self.out_shape(k), self.out_dtype(k), self.prim
            )
        return self._outs[k]

    def tensor_in(self, k: int) -> TensorInfo:
        """Input ``k``, which must be a tensor (not a literal)."""
        x = self.ins[k]
        if not isinstance(x, TensorInfo):
            raise UnsupportedOpError(f"{self.prim}: literal operand {k} not supported here")
        return x


LoweringFn = Callable[[EqnCtx], "tuple[EqnOperand, ...] | None"]
"""Emit via ``ctx`` and return ``None``, or return the output operands (views)."""

LOWERINGS: LoweringTable[LoweringFn] = LoweringTable(package="solar.frontends.jaxfe")
"""jaxpr primitive name -> lowering; every ``ops_*`` module of this package registers."""


@dataclass(slots=True)
class _Frame:
    """One jaxpr being walked: its environment, last uses and current equation."""

    env: dict[Any, Value]
    last_use: dict[Any, int]
    index: int = -1


def _opaque_input(x: Opaque) -> Any:
    def fail(ctx: EqnCtx) -> None:
        raise UnsupportedOpError(f"input of dtype {x.dtype_name} comes from an uncovered op")

    return fail


def _uint8_arithmetic(ctx: EqnCtx) -> None:
    raise UnsupportedOpError(
        f"`{ctx.prim}` on uint8 values or indices (only moves and conversions are exact)"
    )


def _eqn_bytes(eqn: Any) -> int:
    """Input+output bytes of an equation (literals count 0)."""
    total = 0
    for a in [*eqn.invars, *eqn.outvars]:
        if not is_var(a):
            continue
        aval = a.aval
        shape = getattr(aval, "shape", None)
        dtype = getattr(aval, "dtype", None)
        if shape is None or dtype is None:
            continue
        total += shape_numel(shape) * int(getattr(dtype, "itemsize", 4))
    return total
