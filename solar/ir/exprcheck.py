"""Expression checks of the verifier: names, kinds, affinity and bounds of accesses.

Contract: `ExprChecker` holds the scope of one verification run (sizes, tensors,
enclosing loops and guards) and checks expressions against it, reporting through
`ExprChecker.error`; `solar.ir.verify` drives it over declarations and statements.
The rules it enforces are tabulated in the `solar.ir.verify` docstring.
"""

from __future__ import annotations

import difflib
from typing import Literal, assert_never

from solar.diagnostics import IRVerifyError, Span
from solar.ir.affine import Lin, LoopBox, find_extreme, linear_form
from solar.ir.nodes import (
    FUNCTIONS,
    Access,
    Binary,
    BoolLit,
    Call,
    Cast,
    DType,
    Expr,
    FloatLit,
    For,
    IntLit,
    Kernel,
    Name,
    Program,
    TensorDecl,
    Unary,
)
from solar.ir.printer import print_expr
from solar.ir.traversal import walk_exprs

__all__ = ["ExprChecker", "Kind", "has_access", "kind_of", "needs_cast"]

Kind = Literal["int", "float", "bool"]

_SAME_KIND_FUNCS = frozenset(
    {"abs", "sign", "floor", "ceil", "round", "trunc", "min", "max", "fmod", "select"}
)
_BOOL_FUNCS = frozenset({"isnan"})


def kind_of(dtype: DType) -> Kind:
    if dtype is DType.BOOL:
        return "bool"
    return "float" if dtype.is_float else "int"


def _arith(a: Kind | None, b: Kind | None) -> Kind | None:
    if a is None or b is None:
        return None
    return "float" if "float" in (a, b) else "int"


def _join(a: Kind | None, b: Kind | None) -> Kind | None:
    return "bool" if a == b == "bool" else _arith(a, b)


def needs_cast(value: Kind | None, target: Kind | None) -> bool:
    """Whether storing a ``value``-kind result into a ``target``-kind tensor needs a cast."""
    if value is None or target is None:
        return False
    return (value == "float" and target != "float") or (target == "bool" and value != "bool")


def has_access(expr: Expr) -> Access | None:
    return next((e for e in walk_exprs(expr) if isinstance(e, Access)), None)


class ExprChecker:
    """Scope and expression checks of one verification run; ``collect`` keeps going."""

    def __init__(self, program: Program, *, collect: bool) -> None:
        self.program = program
        self.collect = collect
        self.errors: list[IRVerifyError] = []
        self.sizes: dict[str, int] | None = None
        self.size_decls: dict[str, Span | None] = {}
        self.tensors: dict[str, TensorDecl] = {}  # program tensors + the current kernel's locals
        self.declared: dict[str, TensorDecl] = {}  # every tensor declared so far
        self.tensor_names = frozenset(t.name for t in program.tensors) | {
            t.name for k in program.kernels for t in k.locals
        }
        self.local_owner: dict[str, str] = {}
        self.kernel: Kernel | None = None
        self.scope: dict[str, For] = {}
        self.loops: list[LoopBox] = []
        self.guards = 0
        self.forms: dict[int, tuple[Lin, ...]] = {}
        self.dims: dict[int, tuple[int, ...] | None] = {}  # by id(TensorDecl)
        self.indirect: list[Access] = []

    def error(
        self, code: str, message: str, span: Span | None, notes: tuple[str, ...] = ()
    ) -> None:
        """Raise (or, when collecting, record) an `IRVerifyError`."""
        err = IRVerifyError(message, code=code, span=span, notes=notes)
        if not self.collect:
            raise err
        self.errors.append(err)

    def decl(self, name: str) -> TensorDecl | None:
        return self.tensors.get(name)

    def _lookup(self, acc: Access) -> TensorDecl | None:
        decl = self.decl(acc.tensor)
        if decl is not None:
            return decl
        name = acc.tensor
        owner = self.local_owner.get(name)
        if owner is not None:
            self.error(
                "E0215",
                f"`{name}` is local to kernel `{owner}` and cannot be used here",
                acc.span,
                ("declare it as a `temp` tensor to pass values between kernels",),
            )
            return None
        if name in self.size_decls:
            msg = f"`{name}` is a size, not a tensor"
        elif name in self.scope:
            msg = f"`{name}` is a loop index, not a tensor"
        else:
            msg = f"unknown tensor `{name}`"
        close = difflib.get_close_matches(name, list(self.tensors), n=1)
        notes = (f"did you mean `{close[0]}`?",) if close else ()
        self.error("E0203", msg, acc.span, notes)
        return None

    def access(self, acc: Access, *, write: bool = False) -> Kind | None:
        """Check one access; returns the element kind (``None`` if it is broken)."""
        decl = self._lookup(acc)
        if decl is not None and len(acc.indices) != len(decl.shape):
            self.error(
                "E0205",
                f"`{acc.tensor}` has rank {len(decl.shape)} but is indexed with "
                f"{len(acc.indices)} subscript{'s' if len(acc.indices) != 1 else ''}",
                acc.span,
            )
            decl = None
        if write and decl is not None and decl.role in ("input", "param"):
            self.error("E0214", f"cannot write to {decl.role} tensor `{acc.tensor}`", acc.span)
        forms: list[Lin | None] = []
        indirect = False
        for idx in acc.indices:
            kind = self.expr(idx)
            if kind is not None and kind != "int":
                self.error("E0212", f"subscript must be an integer, not {kind}", idx.span)
                forms.append(None)
            elif has_access(idx) is not None:
                indirect = True
                forms.append(None)
            elif kind is not None:
                bad = self.affine_problem(idx)
                if bad is not None:
                    self.error(
                        "E0206", f"subscript is not affine: {bad[1]}", bad[0].span or idx.span
                    )
                forms.append(self.linear(idx) if bad is None else None)
            else:
                forms.append(None)
        if decl is None:
            return None
        if indirect:
            self.indirect.append(acc)
        elif all(f is not None for f in forms):
            full = tuple(f for f in forms if f is not None)
            self.forms[id(acc)] = full
            if not self.guards:
                self._check_in_bounds(acc, decl, full)
        return kind_of(decl.dtype)

    def expr(self, expr: Expr) -> Kind | None:
        """Check names, accesses, calls and kinds in ``expr``; return its kind."""
        match expr:
            case IntLit():
                return "int"
            case FloatLit():
                return "float"
            case BoolLit():
                return "bool"
            case Name():
                return self._name(expr)
            case Access():
                return self.access(expr)
            case Unary(op="not", operand=o):
                self.require_bool(o, "operand of `not`")
                return "bool"
            case Unary(operand=o):
                return _arith(self.expr(o), "int")
            case Binary():
                return self._binary(expr)
            case Call():
                return self._call(expr)
            case Cast(dtype=d, operand=o):
                self.expr(o)
                return kind_of(d)
            case _:
                assert_never(expr)

    def _name(self, name: Name) -> Kind | None:
        if name.name in self.scope or name.name in self.size_decls:
            return "int"
        self._unbound(name)
        return None

    def _binary(self, expr: Binary) -> Kind | None:
        op, a, b = expr.op, expr.lhs, expr.rhs
        if op in ("and", "or"):
            self.require_bool(a, f"operand of `{op}`")
            self.require_bool(b, f"operand of `{op}`")
            return "bool"
        ka, kb = self.expr(a), self.expr(b)
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return "bool"
        if op == "/":
            return None if ka is None or kb is None else "float"
        return _arith(ka, kb)

    def _unbound(self, name: Name) -> None:
        notes: tuple[str, ...] = ()
        if name.name in self.tensor_names:
            notes = (f"`{name.name}` is a tensor: read it as `{name.name}[...]`",)
        msg = f"`{name.name}` is not bound by an enclosing loop or a size"
        self.error("E0204", msg, name.span, notes)

    def require_bool(self, expr: Expr, what: str) -> None:
        kind = self.expr(expr)
        if kind is not None and kind != "bool":
            self.error("E0211", f"{what} must be boolean, not {kind}", expr.span)

    def _call(self, call: Call) -> Kind | None:
        if call.func not in FUNCTIONS:
            notes: tuple[str, ...] = ()
            if self.decl(call.func) is not None:
                notes = (f"`{call.func}` is a tensor: read it as `{call.func}[...]`",)
            else:
                close = difflib.get_close_matches(call.func, list(FUNCTIONS), n=1)
                notes = (f"did you mean `{close[0]}`?",) if close else ()
            self.error("E0210", f"unknown function `{call.func}`", call.span, notes)
            for arg in call.args:
                self.expr(arg)
            return None
        arity = FUNCTIONS[call.func][0]
        if len(call.args) != arity:
            self.error(
                "E0210",
                f"`{call.func}` takes {arity} argument{'s' if arity != 1 else ''}, "
                f"got {len(call.args)}",
                call.span,
            )
            for arg in call.args:
                self.expr(arg)
            return None
        if call.func == "select":
            self.require_bool(call.args[0], "condition of `select`")
            return _join(self.expr(call.args[1]), self.expr(call.args[2]))
        kinds = [self.expr(a) for a in call.args]
        if call.func in _BOOL_FUNCS:
            return "bool"
        if call.func in _SAME_KIND_FUNCS:
            out = kinds[0]
            for k in kinds[1:]:
                out = _join(out, k)
            return out
        return None if None in kinds else "float"

    def affine_problem(self, expr: Expr) -> tuple[Expr, str] | None:
        """The first sub-expression that makes an (integer, access-free) ``expr`` non-affine."""
        return self._affine(expr)[0]

    def _affine(self, expr: Expr) -> tuple[tuple[Expr, str] | None, bool]:
        """(first non-affine node, whether ``expr`` is loop-invariant), in one pass."""
        match expr:
            case IntLit():
                return None, True
            case Name(name=n):
                return None, n not in self.scope
            case Unary(op="-", operand=o):
                return self._affine(o)
            case Binary(op="+" | "-" | "*" | "//" | "%" as op, lhs=a, rhs=b):
                (pa, inv_a), (pb, inv_b) = self._affine(a), self._affine(b)
                if pa is not None or pb is not None:
                    return pa or pb, False
                if op == "*" and not (inv_a or inv_b):
                    return (expr, f"`{print_expr(expr)}` multiplies two loop indices"), False
                if op in ("//", "%"):
                    if not inv_b:
                        return (b, f"`{op}` by `{print_expr(b)}` depends on a loop index"), False
                    divisor = self.linear(b)
                    if divisor is not None and divisor.const <= 0:
                        msg = f"`{op}` by `{print_expr(b)}` = {divisor.const} (not positive)"
                        return (b, msg), False
                return None, inv_a and inv_b
            case Call(func="min" | "max", args=(a, b)):
                (pa, inv_a), (pb, inv_b) = self._affine(a), self._affine(b)
                return pa or pb, inv_a and inv_b
            case _:
                return (expr, f"`{print_expr(expr)}` is not an affine operation"), False

    def linear(self, expr: Expr) -> Lin | None:
        if self.sizes is None:
            return None
        return linear_form(expr, self.sizes, loop_vars=self.scope.keys() - self.sizes.keys())

    def _check_in_bounds(self, acc: Access, decl: TensorDecl, forms: tuple[Lin, ...]) -> None:
        dims = self.dims.get(id(decl))
        if dims is None or self.sizes is None or len(dims) != len(forms):
            return
        for d, (form, extent, idx) in enumerate(zip(forms, dims, acc.indices, strict=True)):
            for largest in (False, True):
                found = find_extreme(form, self.loops, self.sizes, largest=largest)
                if found is None:
                    continue
                value, point = found
                if 0 <= value < extent:
                    continue
                at = ", ".join(f"{v} = {x}" for v, x in point.items() if v in form.vars())
                sizes = ", ".join(f"{k} = {v}" for k, v in self.sizes.items())
                self.error(
                    "E0216",
                    f"subscript `{print_expr(idx)}` of `{acc.tensor}` reaches {value}, outside "
                    f"dimension {d} of size {extent}",
                    idx.span or acc.span,
                    (f"at {at or 'every iteration'} with the default sizes ({sizes})",),
                )
                return
