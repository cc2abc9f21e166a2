"""Vectorised evaluation of IR expressions over an iteration domain.

Contract: `Evaluator.eval(expr, mask)` returns the value of ``expr`` at every point of
the domain as an array of ``domain.ndim`` dimensions (or a scalar), computed with whole
array numpy operations; it never turns IR into Python source. ``mask`` marks the points
that are actually executed: faults (out-of-bounds subscripts, reads of unwritten
elements, integer division by zero) are reported only where it holds, and values at
other points are computed safely but ignored by the caller. ``and``, ``or`` and
``select`` narrow the mask for the operand they guard, so ``i < N and A[i] > 0`` never
faults on ``A[N]`` (short-circuit semantics).

Arithmetic follows numpy with two adjustments (see Note [Executor dtypes] in
`solar.validate.dtypes`): a float array combined with an integer array keeps the float
dtype (as torch does), and bool operands of arithmetic count as integers. Float
operations follow IEEE (x / 0 is inf or NaN, never a fault); the caller runs
evaluation under ``np.errstate(all="ignore")``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from solar.ir import (
    Access,
    Binary,
    BoolLit,
    Call,
    Cast,
    Expr,
    FloatLit,
    IntLit,
    Lin,
    Name,
    Stmt,
    Unary,
    linear_form,
)
from solar.validate.affine import reads_tensor
from solar.validate.dtypes import round_to_dtype
from solar.validate.faults import raise_fault
from solar.validate.functions import (
    ARITH,
    ARITH_UFUNCS,
    FUNCTION_IMPLS,
    Value,
    as_number,
    is_zero,
    kind_of,
    promote,
)
from solar.validate.grids import Domain, affine_view, box_range, broadcast_shape
from solar.validate.state import TensorState

__all__ = ["Evaluator", "ExecCache", "Value"]


class ExecCache:
    """Caches keyed by node identity, for one prepared program at one size binding.

    ``forms`` and ``guarded`` depend only on the program and the sizes; ``padded``
    holds the latest padded copy of a tensor during a run and is cleared after it.
    """

    __slots__ = ("forms", "guarded", "lifetimes", "padded", "roots", "scans")

    def __init__(self) -> None:
        self.forms: dict[int, tuple[Lin, ...] | None] = {}
        self.guarded: dict[int, bool] = {}
        self.padded: dict[tuple[str, int, tuple[tuple[int, int], ...]], np.ndarray] = {}
        self.scans: dict[int, object] = {}
        self.roots: dict[int, Domain] = {}
        """Root domain per kernel index (Note [Domain reuse] in `solar.validate.grids`)."""
        self.lifetimes: dict[str, tuple[int, int]] | None = None
        """Per temp, its first and last kernel (Note [Temp lifetimes])."""


class Evaluator:
    """Evaluates expressions of one statement over one domain (see module docstring)."""

    __slots__ = ("cache", "domain", "owned", "sizes", "stmt", "tensors", "verified")

    def __init__(
        self,
        tensors: Mapping[str, TensorState],
        sizes: Mapping[str, int],
        domain: Domain,
        stmt: Stmt,
        cache: ExecCache,
    ) -> None:
        self.tensors = tensors
        self.sizes = sizes
        self.domain = domain
        self.stmt = stmt
        self.cache = cache
        self.verified: set[int] = set()
        """Ids of accesses already bounds-checked over an enclosing domain."""
        self.owned: dict[int, np.ndarray] = {}
        """Temporaries this evaluator created that nobody else holds (reusable as
        ``out=``); holding them keeps their ids unique."""

    # ---- helpers ----------------------------------------------------------------
    def fault(self, code: str, what: str, bad: np.ndarray | bool | None = None) -> None:
        """Raise an `ExecutionError` for the current statement."""
        raise_fault(code, what, self.stmt, domain=self.domain, bad=bad)

    def state(self, acc: Access) -> TensorState:
        """The tensor an access refers to."""
        st = self.tensors.get(acc.tensor)
        if st is None:
            self.fault("E0309", f"unknown tensor `{acc.tensor}`")
        assert st is not None
        if len(acc.indices) != st.data.ndim:
            self.fault(
                "E0309",
                f"`{acc.tensor}` has rank {st.data.ndim} but is accessed with "
                f"{len(acc.indices)} subscripts",
            )
        return st

    def forms(self, acc: Access) -> tuple[Lin, ...] | None:
        """Affine forms of the subscripts of ``acc`` (cached), or ``None``."""
        key = id(acc)
        if key in self.cache.forms:
            return self.cache.forms[key]
        forms: list[Lin] = []
        for index in acc.indices:
            form = linear_form(index, self.sizes)
            if form is None:
                self.cache.forms[key] = None
                return None
            forms.append(form)
        result = tuple(forms)
        self.cache.forms[key] = result
        return result

    def viewable(self, forms: tuple[Lin, ...]) -> bool:
        """True when every variable of ``forms`` is a progression axis or a scalar."""
        for form in forms:
            for var, _ in form.coefs:
                ax = self.domain.axes.get(var)
                if ax is None:
                    if var not in self.domain.scalars:
                        self.fault("E0309", f"`{var}` is not a loop index or a size")
                elif not ax.is_progression:
                    return False
        return True

    def lin_array(self, form: Lin) -> np.ndarray | int:
        """An affine subscript evaluated over the domain."""
        total: np.ndarray | int = form.const
        for var, coef in form.coefs:
            if var in self.domain.axes:
                total = total + coef * self.domain.var_array(var)
            else:
                total = total + coef * self.domain.scalars[var]
        return total

    # ---- tensor reads -------------------------------------------------------------
    def read(self, acc: Access, mask: np.ndarray | None) -> np.ndarray:
        """``acc`` at every domain point; faults checked at the points of ``mask``."""
        return self.read_checked(acc, mask)[0]

    def read_checked(self, acc: Access, mask: np.ndarray | None) -> tuple[np.ndarray, bool]:
        """Like `read`, also telling whether a zero-padded copy stood in for the tensor."""
        st = self.state(acc)
        forms = self.forms(acc)
        if forms is not None and self.viewable(forms):
            return self._read_affine(acc, st, forms, mask)
        return self._read_gather(acc, st, mask), False

    def inbounds(self, acc: Access) -> np.ndarray | bool:
        """Where the subscripts of an affine access lie inside the tensor."""
        st = self.state(acc)
        forms = self.forms(acc)
        assert forms is not None
        inb: np.ndarray | bool = True
        for form, extent in zip(forms, st.data.shape, strict=True):
            lo, hi = box_range(form, self.domain)
            if lo >= 0 and hi < extent:
                continue
            ix = np.asarray(self.lin_array(form))
            inb = inb & (ix >= 0) & (ix < extent)
        return inb

    def _read_affine(
        self, acc: Access, st: TensorState, forms: tuple[Lin, ...], mask: np.ndarray | None
    ) -> tuple[np.ndarray, bool]:
        key = (id(forms), st.data.shape)
        pads = self.domain.recipes.pads.get(key)
        if pads is None:
            found: list[tuple[int, int]] = []
            for form, extent in zip(forms, st.data.shape, strict=True):
                lo, hi = box_range(form, self.domain)
                found.append((max(0, -lo), max(0, hi - extent + 1)))
            pads = tuple(found)
            self.domain.recipes.pads[key] = pads
        padded = any(a or b for a, b in pads)
        if not padded:
            view = affine_view(st.data, forms, self.domain)
            written = st.written  # one read: another thread may drop the mask meanwhile
            if written is not None:
                self._check_written(acc, affine_view(written, forms, self.domain), mask)
            return view, False
        if id(acc) not in self.verified:
            self.check_bounds(acc, forms, st.data.shape, mask)
        pad_key = (acc.tensor, st.version, pads)
        data = self.cache.padded.get(pad_key)
        if data is None:
            data = np.pad(st.data, pads)
            self.cache.padded.clear()
            self.cache.padded[pad_key] = data
        shift = [p[0] for p in pads]
        view = affine_view(data, forms, self.domain, shift)
        written = st.written
        if written is not None:
            written = np.pad(written, pads, constant_values=True)
            self._check_written(acc, affine_view(written, forms, self.domain, shift), mask)
        return view, True

    def check_bounds(
        self,
        acc: Access,
        forms: tuple[Lin, ...],
        shape: tuple[int, ...],
        mask: np.ndarray | None,
    ) -> None:
        """Fault (E0301) if an affine subscript leaves the tensor at an active point."""
        for dim, (form, extent) in enumerate(zip(forms, shape, strict=True)):
            lo, hi = box_range(form, self.domain)
            if lo >= 0 and hi < extent:
                continue
            ix = np.asarray(self.lin_array(form))
            bad = (ix < 0) | (ix >= extent)
            if mask is not None:
                bad = bad & mask
            if np.any(bad):
                self.fault(
                    "E0301",
                    f"subscript {dim} of `{acc.tensor}` out of bounds (extent {extent})",
                    bad,
                )

    def _check_written(self, acc: Access, written: np.ndarray, mask: np.ndarray | None) -> None:
        bad = ~written
        if mask is not None:
            bad = bad & mask
        if np.any(bad):
            self.fault("E0302", f"read of a never-written element of `{acc.tensor}`", bad)

    def index_arrays(self, acc: Access, mask: np.ndarray | None) -> list[Value]:
        """Integer subscripts of ``acc`` over the domain, bounds-checked and clipped."""
        st = self.state(acc)
        out: list[Value] = []
        for dim, (index, extent) in enumerate(zip(acc.indices, st.data.shape, strict=True)):
            ix = self.eval(index, mask)
            kind = kind_of(ix)
            if kind == "b":
                ix = as_number(ix)
            elif kind not in "iu":
                self.fault("E0307", f"subscript {dim} of `{acc.tensor}` is not an integer")
            bad = (np.asarray(ix) < 0) | (np.asarray(ix) >= extent)
            active = bad if mask is None else bad & mask
            if np.any(active):
                self.fault(
                    "E0301",
                    f"subscript {dim} of `{acc.tensor}` out of bounds (extent {extent})",
                    active,
                )
            if np.any(bad):
                ix = np.clip(ix, 0, extent - 1)
            out.append(ix)
        return out

    def _read_gather(self, acc: Access, st: TensorState, mask: np.ndarray | None) -> np.ndarray:
        index = tuple(np.asarray(ix, dtype=np.intp) for ix in self.index_arrays(acc, mask))
        written = st.written
        if written is not None:
            self._check_written(acc, np.asarray(written[index]), mask)
        return np.asarray(st.data[index])

    # ---- expressions ----------------------------------------------------------------
    def _guarded(self, expr: Expr) -> bool:
        """True when evaluating ``expr`` can fault (reads, integer division)."""
        key = id(expr)
        hit = self.cache.guarded.get(key)
        if hit is None:
            hit = reads_tensor(expr) or _has_division(expr)
            self.cache.guarded[key] = hit
        return hit

    def eval(self, expr: Expr, mask: np.ndarray | None) -> Value:
        """The value of ``expr`` at every domain point (see module docstring)."""
        match expr:
            case FloatLit(value=v) | IntLit(value=v) | BoolLit(value=v):
                return v
            case Name(name=n):
                return self._name(n)
            case Access():
                return self.read(expr, mask)
            case Unary(op="-", operand=o):
                return np.negative(as_number(self.eval(o, mask)))
            case Unary(op="not", operand=o):
                return np.logical_not(self.eval(o, mask))
            case Binary():
                return self._binary(expr, mask)
            case Call():
                return self._call(expr, mask)
            case Cast(dtype=d, operand=o):
                return round_to_dtype(np.asarray(self.eval(o, mask)), d)
            case _:
                self.fault("E0309", f"unsupported expression {type(expr).__name__}")
                return 0

    def _name(self, n: str) -> Value:
        """A loop index (its values over the domain), a scalar or a size."""
        if n in self.domain.axes:
            return self.domain.var_array(n)
        if n in self.domain.scalars:
            return self.domain.scalars[n]
        if n in self.sizes:
            return self.sizes[n]
        self.fault("E0309", f"`{n}` is not a loop index or a size")
        return 0

    def split_last(
        self, expr: Expr, mask: np.ndarray | None
    ) -> tuple[np.ufunc, tuple[Value, ...]] | None:
        """The final ufunc of ``expr`` and its evaluated operands, or ``None``.

        Lets the caller run the last operation straight into the target tensor
        (``out=``) instead of computing a temporary and copying it. Only plain
        arithmetic and one-argument ufunc calls qualify; ``None`` means nothing was
        evaluated.
        """
        match expr:
            case Binary(op="+" | "-" | "*" | "/" as op, lhs=lhs, rhs=rhs):
                a = as_number(self.eval(lhs, mask))
                b = as_number(self.eval(rhs, mask))
                return ARITH_UFUNCS[op], promote(a, b)
            case Call(func=func, args=(arg,)) if isinstance(FUNCTION_IMPLS.get(func), np.ufunc):
                impl = FUNCTION_IMPLS[func]
                assert isinstance(impl, np.ufunc)
                return impl, (as_number(self.eval(arg, mask)),)
            case _:
                return None

    def _narrow(self, mask: np.ndarray | None, cond: Value) -> np.ndarray | None:
        cond_arr = np.asarray(cond, dtype=bool)
        return cond_arr if mask is None else mask & cond_arr

    def _binary(self, expr: Binary, mask: np.ndarray | None) -> Value:
        op = expr.op
        if op in ("and", "or"):
            lhs = np.asarray(self.eval(expr.lhs, mask), dtype=bool)
            guard = lhs if op == "and" else ~lhs
            rmask = self._narrow(mask, guard) if self._guarded(expr.rhs) else mask
            rhs = np.asarray(self.eval(expr.rhs, rmask), dtype=bool)
            result: np.ndarray = lhs & rhs if op == "and" else lhs | rhs
            return result
        a = as_number(self.eval(expr.lhs, mask))
        b = as_number(self.eval(expr.rhs, mask))
        a, b = promote(a, b)
        if op in ("//", "%"):
            return self._floor_op(op, a, b, mask)
        if op in ("+", "-", "*") and isinstance(a, int) and isinstance(b, int):
            return a + b if op == "+" else (a - b if op == "-" else a * b)
        if op in ARITH_UFUNCS:
            return self.apply(ARITH_UFUNCS[op], a, b)
        return ARITH[op](a, b)

    def apply(self, ufunc: np.ufunc, *args: Value) -> Value:
        """``ufunc(*args)``, writing into a temporary of this evaluator when one fits.

        A temporary (a result this evaluator computed, not a view of a tensor) that
        has the result's shape and dtype is overwritten instead of allocating a new
        array: ``(X - m) * r * g + b`` makes one temporary, not four.
        """
        out: np.ndarray | None = None
        for x in args:
            if isinstance(x, np.ndarray) and id(x) in self.owned:
                shape = broadcast_shape(*(np.shape(a) for a in args))
                if x.shape == shape and x.dtype == np.result_type(*args):
                    out = x
                    break
        result: Value = ufunc(*args, out=out) if out is not None else ufunc(*args)
        if isinstance(result, np.ndarray) and result.ndim:
            self.owned[id(result)] = result
        return result

    def _floor_op(self, op: str, a: Value, b: Value, mask: np.ndarray | None) -> Value:
        if kind_of(a) in "iu" and kind_of(b) in "iu":
            zero = is_zero(b)
            if np.any(zero):
                active = zero if mask is None else np.asarray(zero) & mask
                if np.any(active):
                    self.fault(
                        "E0303", f"integer {'division' if op == '//' else 'modulo'} by zero", active
                    )
                b = np.where(zero, 1, b)
            if isinstance(a, int) and isinstance(b, int):
                return a // b if op == "//" else a % b
        return np.floor_divide(a, b) if op == "//" else np.remainder(a, b)

    def _call(self, expr: Call, mask: np.ndarray | None) -> Value:
        func = expr.func
        if func == "select":
            cond = np.asarray(self.eval(expr.args[0], mask), dtype=bool)
            a_mask = self._narrow(mask, cond) if self._guarded(expr.args[1]) else mask
            b_mask = self._narrow(mask, ~cond) if self._guarded(expr.args[2]) else mask
            a, b = self.eval(expr.args[1], a_mask), self.eval(expr.args[2], b_mask)
            a, b = promote(as_number(a) if kind_of(b) != "b" else a, b)
            return np.where(cond, a, b)
        args = [as_number(self.eval(a, mask)) for a in expr.args]
        if func == "pow":
            base, exponent = promote(*args)
            if kind_of(base) in "iu" and kind_of(exponent) in "iu":
                neg = np.asarray(exponent) < 0
                active = neg if mask is None else neg & mask
                if np.any(active):
                    self.fault("E0307", "integer raised to a negative integer power", active)
                exponent = np.where(neg, 0, exponent) if np.any(neg) else exponent
            return np.power(base, exponent)
        if func == "fmod":
            a, b = promote(*args)
            if kind_of(a) in "iu" and kind_of(b) in "iu":
                zero = is_zero(b)
                active = zero if mask is None else np.asarray(zero) & mask
                if np.any(active):
                    self.fault("E0303", "integer fmod by zero", active)
                b = np.where(zero, 1, b) if np.any(zero) else b
            return np.fmod(a, b)
        impl = FUNCTION_IMPLS.get(func)
        if impl is None:
            self.fault("E0309", f"unknown function `{func}`")
            return 0
        if len(args) == 2:
            args = list(promote(args[0], args[1]))
        if isinstance(impl, np.ufunc) and impl.nout == 1 and func != "isnan":
            return self.apply(impl, *args)
        return impl(*args)


def _has_division(expr: Expr) -> bool:
    match expr:
        case Binary(op=op, lhs=a, rhs=b):
            return op in ("//", "%") or _has_division(a) or _has_division(b)
        case Unary(operand=o) | Cast(operand=o):
            return _has_division(o)
        case Call(func=f, args=args):
            return f in ("fmod", "pow") or any(_has_division(a) for a in args)
        case _:
            return False
