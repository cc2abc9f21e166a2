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

import math
from collections.abc import Callable, Mapping
from typing import TypeAlias

import numpy as np

from solar.ir import Access, Binary, BoolLit, Call, Cast, Expr, FloatLit, IntLit, Name, Stmt, Unary
from solar.validate.affine import Lin, linearize
from solar.validate.dtypes import round_to_dtype
from solar.validate.faults import raise_fault
from solar.validate.grids import Domain, affine_view, box_range
from solar.validate.state import TensorState

__all__ = ["FUNCTION_IMPLS", "Evaluator", "ExecCache", "Value"]

Value: TypeAlias = np.ndarray | np.generic | int | float | bool


def _erf_fallback() -> Callable[[np.ndarray], np.ndarray]:
    scalar = np.frompyfunc(math.erf, 1, 1)

    def erf(x: np.ndarray) -> np.ndarray:
        arr = np.asarray(x)
        dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
        return np.asarray(scalar(arr), dtype=dtype)

    return erf


def _erf_impl() -> Callable[[np.ndarray], np.ndarray]:
    try:  # scipy is optional: exact and fast when present
        from scipy.special import erf  # noqa: PLC0415
    except ImportError:  # pragma: no cover - depends on the environment
        return _erf_fallback()
    return erf  # type: ignore[no-any-return]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))  # type: ignore[no-any-return]


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)  # type: ignore[no-any-return]


def _reciprocal(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.asarray(x)  # type: ignore[no-any-return]


FUNCTION_IMPLS: dict[str, Callable[..., Value]] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "erf": _erf_impl(),
    "abs": np.abs,
    "sign": np.sign,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,
    "trunc": np.trunc,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "atan": np.arctan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "reciprocal": _reciprocal,
    "isnan": np.isnan,
    "atan2": np.arctan2,
    "min": np.minimum,
    "max": np.maximum,
}

_ARITH: dict[str, Callable[[Value, Value], Value]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}


class ExecCache:
    """Caches keyed by node identity, for one prepared program at one size binding.

    ``forms`` and ``guarded`` depend only on the program and the sizes; ``padded``
    holds the latest padded copy of a tensor during a run and is cleared after it.
    """

    __slots__ = ("forms", "guarded", "padded", "scans")

    def __init__(self) -> None:
        self.forms: dict[int, tuple[Lin, ...] | None] = {}
        self.guarded: dict[int, bool] = {}
        self.padded: dict[tuple[str, int, tuple[tuple[int, int], ...]], np.ndarray] = {}
        self.scans: dict[int, object] = {}


def _kind(x: Value) -> str:
    if isinstance(x, bool | np.bool_):
        return "b"
    if isinstance(x, int):
        return "i"
    if isinstance(x, float):
        return "f"
    return np.asarray(x).dtype.kind


def _as_number(x: Value) -> Value:
    """Bools become int64 for arithmetic (numpy would treat ``+`` as ``or``)."""
    if isinstance(x, np.ndarray) and x.dtype == np.bool_:
        return x.astype(np.int64)
    if isinstance(x, bool | np.bool_):
        return int(x)
    return x


def _promote(a: Value, b: Value) -> tuple[Value, Value]:
    """Float array op int array keeps the float dtype (torch semantics), not float64."""
    ka, kb = _kind(a), _kind(b)
    if ka == "f" and kb in "iub" and isinstance(b, np.ndarray) and isinstance(a, np.ndarray):
        return a, b.astype(a.dtype)
    if kb == "f" and ka in "iub" and isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.astype(b.dtype), b
    return a, b


def _is_zero(x: Value) -> np.ndarray | bool:
    return np.asarray(x) == 0 if isinstance(x, np.ndarray) else x == 0


class Evaluator:
    """Evaluates expressions of one statement over one domain (see module docstring)."""

    __slots__ = ("cache", "domain", "sizes", "stmt", "tensors")

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
            form = linearize(index, self.sizes)
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

    def lin_array(self, form: Lin) -> Value:
        """An affine subscript evaluated over the domain."""
        total: Value = form.const
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
            ix = self.lin_array(form)
            inb = inb & (ix >= 0) & (ix < extent)
        return inb

    def _read_affine(
        self, acc: Access, st: TensorState, forms: tuple[Lin, ...], mask: np.ndarray | None
    ) -> tuple[np.ndarray, bool]:
        pads: list[tuple[int, int]] = []
        padded = False
        for form, extent in zip(forms, st.data.shape, strict=True):
            lo, hi = box_range(form, self.domain)
            pads.append((max(0, -lo), max(0, hi - extent + 1)))
            padded = padded or lo < 0 or hi >= extent
        if not padded:
            view = affine_view(st.data, forms, self.domain)
            if st.written is not None:
                self._check_written(acc, affine_view(st.written, forms, self.domain), mask)
            return view, False
        self.check_bounds(acc, forms, st.data.shape, mask)
        key = (acc.tensor, st.version, tuple(pads))
        data = self.cache.padded.get(key)
        if data is None:
            data = np.pad(st.data, pads)
            self.cache.padded.clear()
            self.cache.padded[key] = data
        shift = [p[0] for p in pads]
        view = affine_view(data, forms, self.domain, shift)
        if st.written is not None:
            written = np.pad(st.written, pads, constant_values=True)
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
            ix = self.lin_array(form)
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
            kind = _kind(ix)
            if kind == "b":
                ix = _as_number(ix)
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
        if st.written is not None:
            self._check_written(acc, np.asarray(st.written[index]), mask)
        return np.asarray(st.data[index])

    # ---- expressions ----------------------------------------------------------------
    def _guarded(self, expr: Expr) -> bool:
        """True when evaluating ``expr`` can fault (reads, integer division)."""
        key = id(expr)
        hit = self.cache.guarded.get(key)
        if hit is None:
            from solar.validate.affine import reads_tensor  # noqa: PLC0415

            hit = reads_tensor(expr) or _has_division(expr)
            self.cache.guarded[key] = hit
        return hit

    def eval(self, expr: Expr, mask: np.ndarray | None) -> Value:
        """The value of ``expr`` at every domain point (see module docstring)."""
        match expr:
            case FloatLit(value=v):
                return v
            case IntLit(value=v):
                return v
            case BoolLit(value=v):
                return v
            case Name(name=n):
                if n in self.domain.axes:
                    return self.domain.var_array(n)
                if n in self.domain.scalars:
                    return self.domain.scalars[n]
                if n in self.sizes:
                    return self.sizes[n]
                self.fault("E0309", f"`{n}` is not a loop index or a size")
                return 0
            case Access():
                return self.read(expr, mask)
            case Unary(op="-", operand=o):
                return np.negative(_as_number(self.eval(o, mask)))
            case Unary(op="not", operand=o):
                return np.logical_not(self.eval(o, mask))
            case Binary():
                return self._binary(expr, mask)
            case Call():
                return self._call(expr, mask)
            case Cast(dtype=d, operand=o):
                return round_to_dtype(self.eval(o, mask), d)
            case _:
                self.fault("E0309", f"unsupported expression {type(expr).__name__}")
                return 0

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
            return lhs & rhs if op == "and" else lhs | rhs
        a = _as_number(self.eval(expr.lhs, mask))
        b = _as_number(self.eval(expr.rhs, mask))
        a, b = _promote(a, b)
        if op in ("//", "%"):
            return self._floor_op(op, a, b, mask)
        if op in ("+", "-", "*") and isinstance(a, int) and isinstance(b, int):
            return a + b if op == "+" else (a - b if op == "-" else a * b)
        return _ARITH[op](a, b)

    def _floor_op(self, op: str, a: Value, b: Value, mask: np.ndarray | None) -> Value:
        if _kind(a) in "iu" and _kind(b) in "iu":
            zero = _is_zero(b)
            if np.any(zero):
                active = zero if mask is None else np.asarray(zero) & mask
                if np.any(active):
                    self.fault("E0303", f"integer {'division' if op == '//' else 'modulo'} by zero", active)
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
            a, b = _promote(_as_number(a) if _kind(b) != "b" else a, b)
            return np.where(cond, a, b)
        args = [_as_number(self.eval(a, mask)) for a in expr.args]
        if func == "pow":
            base, exponent = _promote(*args)
            if _kind(base) in "iu" and _kind(exponent) in "iu":
                neg = np.asarray(exponent) < 0
                active = neg if mask is None else neg & mask
                if np.any(active):
                    self.fault("E0307", "integer raised to a negative integer power", active)
                exponent = np.where(neg, 0, exponent) if np.any(neg) else exponent
            return np.power(base, exponent)
        if func == "fmod":
            a, b = _promote(*args)
            if _kind(a) in "iu" and _kind(b) in "iu":
                zero = _is_zero(b)
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
            args = list(_promote(args[0], args[1]))
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
