"""Make a traced program symbolic in the model file's size constants.

Contract: ``(captured Program, its size binding, a re-capture function) ->
SymbolicProgram``: the same program with every integer literal that follows a size
constant (a loop bound, a shape, a subscript stride, a guard) replaced by that size or
by a derived size (``size D_MODEL_x3 = 3 * D_MODEL``), so the bounds and formulas
answer every binding of the sizes without tracing again. When the derivation cannot be
confirmed the captured program comes back unchanged, with the reason.

Note [Symbolic sizes by re-binding]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A tracer sees numbers, never the expressions that made them: ``qkv`` has 96 output
features, not ``3 * D_MODEL``. We recover the expressions by capturing again:

1. *Perturb*: capture once per candidate size with that size doubled (the others at
   the base binding). Each capture must have the same structure as the base one (same
   nodes, names, loop steps; only integer literals may differ), otherwise the size is
   left constant. The literals that changed depend on that size; this disambiguates
   coincidences (``SEQ = 8`` and ``D_MODEL // HEADS = 8`` at the base are two
   different literals that move under different perturbations).
2. *Fit* each literal that moved: a monomial ``c * S1^e1 * S2^e2 ...`` (exponents from
   the ratios, ``-2..3``, ``c`` rational: ``D_MODEL // HEADS``, ``BATCH * SEQ``), else an
   affine form ``a + b1*S1 + ...`` with integer coefficients (``H - K + 1``). A size
   some literal cannot be fitted in is left constant, and the fit is redone without it.
3. *Verify*: capture a third time with every remaining size tripled, and require that
   every fitted literal reproduces that capture's literal exactly (a literal that fails
   gets its other form tried). Any failure leaves the whole program constant. A tracer
   whose re-captures build real inputs (JAX: ``get_inputs()`` returns numpy arrays) may
   give a byte budget: when the inputs the fits predict at 3x exceed it (27x the bytes
   for three sizes), each size is halved instead where it is even and stays above 1
   (tripled otherwise), so the check capture stays small (issue 17: peak RSS).

Float literals (``x / 32.0`` in a mean) carry values, not costs: they keep their
captured values, so the symbolic program re-bound elsewhere has exact shapes, loop
bounds, subscripts and guards (everything counts and bounds read), not exact values.
Sizes equal to 1 (or below) are never made symbolic: extent-1 loops are not emitted,
so such a size leaves no literal to follow.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from fractions import Fraction
from typing import Any, Final, NamedTuple

from solar.diagnostics import FrontendError, SolarError
from solar.guard import InterruptedRunError, ResultCodec, run_own_process
from solar.ir import Binary, FloatLit, IntLit, Name, Program, SizeDecl, verify_program

__all__ = ["CaptureAt", "SizeFit", "SymbolicProgram", "symbolic_notes", "symbolize_sizes"]

_EXPONENTS = (-2, -1, 1, 2, 3)
_PERTURB = 2
_VERIFY = 3


@dataclass(frozen=True, slots=True)
class SizeFit:
    """One integer literal as a function of sizes.

    Attributes:
        kind: ``monomial`` (``coef * prod(S**e)``, floor-divided when ``coef`` or an
            exponent is fractional/negative) or ``affine`` (``const + sum(b*S)``).
        coef: the monomial's rational coefficient.
        terms: ``(size, exponent)`` for a monomial, ``(size, coefficient)`` for affine.
        const: the affine constant.
    """

    kind: str
    coef: Fraction
    terms: tuple[tuple[str, int], ...]
    const: int = 0

    def value(self, binding: Mapping[str, int]) -> int:
        """The literal at ``binding`` (the IR's own ``//`` semantics for monomials).

        >>> SizeFit("monomial", Fraction(1), (("D", 1), ("H", -1))).value({"D": 96, "H": 4})
        24
        """
        if self.kind == "affine":
            return self.const + sum(b * binding[s] for s, b in self.terms)
        num = self.coef.numerator
        den = self.coef.denominator
        for s, e in self.terms:
            if e > 0:
                num *= binding[s] ** e
            else:
                den *= binding[s] ** (-e)
        return num // den


@dataclass(frozen=True, slots=True)
class SymbolicProgram:
    """The outcome of `symbolize_sizes`.

    Attributes:
        program: the symbolic program (or the captured one, unchanged, on fallback).
        sizes: the free sizes the program is symbolic in, at the captured binding.
        constant: sizes left constant, each with the reason.
        reason: why the program stayed constant, when it did (``None`` otherwise).
        derived: constants the file computes from other sizes (they follow them).
        checked_at: the verification binding, in words (``3x``, or the halved sizes).
    """

    program: Program
    sizes: dict[str, int]
    constant: dict[str, str]
    reason: str | None = None
    derived: tuple[str, ...] = ()
    checked_at: str = "3x"

    @property
    def symbolic(self) -> bool:
        """True when at least one size is symbolic."""
        return bool(self.sizes) and self.reason is None


# ---------------------------------------------------------------------------- structure
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _field_names(cls: type) -> tuple[str, ...] | None:
    """The fields of a dataclass node type but its span (``None``: not a dataclass),
    looked up once per type: ``dataclasses.fields`` per node was a tenth of a warm
    analysis."""
    names = _FIELDS.get(cls, ())
    if names == ():
        names = (
            tuple(f.name for f in fields(cls) if f.name != "span") if is_dataclass(cls) else None
        )
        _FIELDS[cls] = names
    return names


def _same_tuple(old: tuple[Any, ...], new: list[Any]) -> tuple[Any, ...]:
    """``old`` when ``new`` holds the very same items, else ``tuple(new)``."""
    return old if all(a is b for a, b in zip(old, new, strict=True)) else tuple(new)


def _skeleton(node: Any, ints: list[int]) -> Any:
    """``node`` with its int literals zeroed (values appended to ``ints``) and float
    literals zeroed, so two captures compare equal iff only literals differ."""
    if isinstance(node, IntLit):
        ints.append(node.value)
        return IntLit(0)
    if isinstance(node, FloatLit):
        return FloatLit(0.0)
    if isinstance(node, tuple):
        return _same_tuple(node, [_skeleton(x, ints) for x in node])
    names = _field_names(type(node))
    if names is not None:
        changes = {}
        for name in names:
            old = getattr(node, name)
            new = _skeleton(old, ints)
            if new is not old:
                changes[name] = new
        return replace(node, **changes) if changes else node
    return node


def _substitute(node: Any, exprs: Mapping[int, Any], counter: list[int]) -> Any:
    """``node`` with int literal number ``n`` (in `_skeleton` order) replaced by ``exprs[n]``."""
    if isinstance(node, IntLit):
        n = counter[0]
        counter[0] += 1
        return exprs.get(n, node)
    if isinstance(node, tuple):
        return _same_tuple(node, [_substitute(x, exprs, counter) for x in node])
    names = None if isinstance(node, FloatLit) else _field_names(type(node))
    if names is not None:
        changes = {}
        for name in names:
            old = getattr(node, name)
            new = _substitute(old, exprs, counter)
            if new is not old:
                changes[name] = new
        return replace(node, **changes) if changes else node
    return node


def _literals(program: Program) -> tuple[Any, tuple[int, ...]]:
    ints: list[int] = []
    skel = _skeleton((program.tensors, program.kernels), ints)
    return skel, tuple(ints)


# ---------------------------------------------------------------------------- fitting
def _fit_monomial(
    v0: int, moved: Mapping[str, int], base: Mapping[str, int]
) -> SizeFit | None:
    if v0 <= 0:
        return None
    terms = []
    for s, v in sorted(moved.items()):
        if v <= 0:
            return None
        ratio = Fraction(v, v0)
        exps = [e for e in _EXPONENTS if Fraction(_PERTURB) ** e == ratio]
        if not exps:
            return None
        terms.append((s, exps[0]))
    coef = Fraction(v0)
    for s, e in terms:
        coef /= Fraction(base[s]) ** e
    fit = SizeFit("monomial", coef, tuple(terms))
    return fit if fit.value(base) == v0 else None


def _fit_affine(v0: int, moved: Mapping[str, int], base: Mapping[str, int]) -> SizeFit | None:
    terms = []
    const = Fraction(v0)
    for s, v in sorted(moved.items()):
        b = Fraction(v - v0, base[s] * (_PERTURB - 1))
        if b.denominator != 1:
            return None
        terms.append((s, int(b)))
        const -= b * base[s]
    return SizeFit("affine", Fraction(1), tuple(terms), int(const))


def _fits(v0: int, moved: Mapping[str, int], base: Mapping[str, int]) -> list[SizeFit]:
    """The candidate forms of one literal, preferred first."""
    out = [f for f in (_fit_monomial(v0, moved, base), _fit_affine(v0, moved, base)) if f]
    return out


# ---------------------------------------------------------------------------- expressions
def _expr(fit: SizeFit) -> Any:
    """The IR expression of a fit (sizes as `Name`, integers as `IntLit`)."""
    if fit.kind == "affine":
        expr: Any = None
        for s, b in fit.terms:
            term: Any = Name(s) if abs(b) == 1 else Binary("*", IntLit(abs(b)), Name(s))
            if expr is None:
                expr = term if b > 0 else Binary("-", IntLit(0), term)
            else:
                expr = Binary("+" if b > 0 else "-", expr, term)
        if fit.const:
            expr = Binary("+" if fit.const > 0 else "-", expr, IntLit(abs(fit.const)))
        return expr
    num: list[Any] = [IntLit(fit.coef.numerator)] if fit.coef.numerator != 1 else []
    den: list[Any] = [IntLit(fit.coef.denominator)] if fit.coef.denominator != 1 else []
    for s, e in fit.terms:
        (num if e > 0 else den).extend([Name(s)] * abs(e))
    top = _product(num) if num else IntLit(1)
    return Binary("//", top, _product(den)) if den else top


def _product(factors: Sequence[Any]) -> Any:
    out = factors[0]
    for f in factors[1:]:
        out = Binary("*", out, f)
    return out


def _readable_name(fit: SizeFit) -> str:
    """A size name that says what it is: ``D_MODEL_x3``, ``BATCH_SEQ``, ``H_m2``."""
    if fit.kind == "affine":
        parts = [s if b == 1 else f"{s}_x{b}".replace("-", "m") for s, b in fit.terms]
        name = "_".join(parts)
        if fit.const:
            name += f"_{'p' if fit.const > 0 else 'm'}{abs(fit.const)}"
        return name
    up = [s if e == 1 else f"{s}{e}" for s, e in fit.terms if e > 0]
    down = [s if e == -1 else f"{s}{-e}" for s, e in fit.terms if e < 0]
    name = "_".join(up) or "1"
    if fit.coef.numerator != 1:
        name += f"_x{fit.coef.numerator}"
    if down or fit.coef.denominator != 1:
        den = down + ([str(fit.coef.denominator)] if fit.coef.denominator != 1 else [])
        name += "_per_" + "_".join(den)
    return re.sub(r"\W", "_", name)


def _is_plain_size(fit: SizeFit) -> str | None:
    if fit.kind == "monomial" and fit.coef == 1 and len(fit.terms) == 1 and fit.terms[0][1] == 1:
        return fit.terms[0][0]
    if fit.kind == "affine" and fit.const == 0 and fit.terms == ((fit.terms[0][0], 1),):
        return fit.terms[0][0]
    return None


# ---------------------------------------------------------------------------- driver
CaptureAt = Callable[[Mapping[str, int]], tuple[Program, Mapping[str, int]]]
"""Capture and lower the program with some size constants overridden; returns the
program and every size constant of the file as it ran (derived ones recomputed).

Raises:
    SolarError: the program cannot be captured at that binding.
"""


class _Probe(NamedTuple):
    """A re-capture as symbolize reads it: same structure as the base capture, its
    integer literals, and every size constant as it ran."""

    same: bool
    ints: tuple[int, ...]
    sizes: dict[str, int]


def _encode_probe(p: _Probe) -> str:
    return json.dumps([p.same, list(p.ints), p.sizes])


def _decode_probe(text: str) -> _Probe:
    """A `_Probe` from the probe process; nothing else (ValueError)."""
    same, ints, sizes = json.loads(text)
    if (
        type(same) is not bool
        or not isinstance(ints, list)
        or not all(type(i) is int for i in ints)
        or not isinstance(sizes, dict)
        or not all(type(v) is int for v in sizes.values())
    ):
        raise ValueError("not a probe")
    return _Probe(same, tuple(ints), sizes)


_PROBES: Final = ResultCodec(_encode_probe, _decode_probe)


def _probe(capture_at: CaptureAt, sizes: dict[str, int], skel: Any) -> _Probe | SolarError:
    """``capture_at(sizes)`` compared with the base capture's skeleton ``skel``, in a
    process of its own where the guarded run gives it one (Note [Probes in a process of
    their own] in `solar.guard`). A program that ends itself there (``sys.exit``, a
    segfault, an abort at a size it was never run at) is a failed probe, so the size
    stays constant with a note, instead of ending the analysis of the sizes the user
    asked for; a time limit or an interrupt still ends it.

    Returns:
        The probe, or the error that failed it (E0530 ``sys.exit``, E0531 a crash, the
        capture's own errors).

    Raises:
        SolarError: E0950 or E0951, which end the analysis.
    """

    def run() -> _Probe:
        try:
            other, ran = capture_at(sizes)
        except SystemExit as err:
            raise FrontendError(
                f"the program called sys.exit({err.code!r})", code="E0530"
            ) from None
        o_skel, ints = _literals(other)
        return _Probe(o_skel == skel, ints, dict(ran))

    try:
        return run_own_process(run, codec=_PROBES)
    except SolarError as err:
        if isinstance(err, InterruptedRunError) or err.code == "E0950":
            raise  # an interrupt or the time limit: the analysis stops, not the probe
        return err


def symbolize_sizes(
    program: Program,
    binding: Mapping[str, int],
    capture_at: CaptureAt,
    *,
    fixed: Mapping[str, int] | None = None,
    verify_input_bytes: int | None = None,
) -> SymbolicProgram:
    """The captured ``program`` made symbolic in ``binding``'s sizes (Note [Symbolic
    sizes by re-binding]).

    A constant the file derives from another (``HIDDEN = 4 * D``: it moves when ``D``
    is perturbed) is no size of its own: it follows the one it derives from.

    Args:
        program: the program captured and lowered at ``binding``.
        binding: the model file's size constants as captured.
        capture_at: captures and lowers the program with some constants overridden.
        fixed: the overrides the capture of ``program`` used (the user's ``--set``);
            every re-capture applies them too.
        verify_input_bytes: the most input bytes the check capture may build (the
            fits predict them); above it the check halves the sizes instead.

    Returns:
        The symbolic program, or ``program`` unchanged with the reason.
    """
    fixed = dict(fixed or {})
    constant: dict[str, str] = {}
    candidates = [s for s, v in binding.items() if v >= 2]
    for s, v in binding.items():
        if v < 2:
            constant[s] = f"{s}={v}: sizes of 1 or less leave no trace in the IR"
    if not candidates:
        return SymbolicProgram(program, {}, constant, "the file has no size constant above 1")
    skel, base_ints = _literals(program)
    moved, derived = _perturb_each(skel, candidates, binding, capture_at, fixed, constant)
    follows = tuple(sorted(derived & set(binding)))
    fits = _fit_all(base_ints, moved, binding, constant)
    if fits is None or not moved:
        return SymbolicProgram(program, {}, constant, "no size constant could be followed")
    at, where = _check_point(program, fits, binding, sorted(moved), verify_input_bytes)
    check = {**binding, **at}
    checked = _probe(capture_at, {**fixed, **at}, skel)
    if isinstance(checked, SolarError):
        return SymbolicProgram(program, {}, constant,
                               f"the check capture at {where} failed: {checked.message}")
    if not checked.same:
        return SymbolicProgram(program, {}, constant,
                               f"the program's structure changes at {where}")
    check.update({k: v for k, v in checked.sizes.items() if k in check})
    chosen: dict[int, SizeFit] = {}
    for n, options in fits.items():
        good = [f for f in options if f.value(check) == checked.ints[n]]
        if not good:
            return SymbolicProgram(
                program, {}, constant,
                f"a traced dimension ({base_ints[n]}) does not follow a simple formula "
                "in the sizes",
            )
        chosen[n] = good[0]
    return replace(
        _build(program, binding, chosen, constant), derived=follows, checked_at=where
    )


def _perturb_each(
    skel: Any,
    candidates: list[str],
    binding: Mapping[str, int],
    capture_at: CaptureAt,
    fixed: Mapping[str, int],
    constant: dict[str, str],
) -> tuple[dict[str, tuple[int, ...]], set[str]]:
    """Re-capture at 2x each candidate: ``(the literals of each that kept the program's
    structure, the constants that moved with another: derived)``; why the others stay
    constant goes into ``constant``. A derived constant is no size of its own."""
    moved: dict[str, tuple[int, ...]] = {}
    derived: set[str] = set()
    for s in candidates:
        probe = _probe(capture_at, {**fixed, s: binding[s] * _PERTURB}, skel)
        if isinstance(probe, SolarError):
            constant[s] = f"capturing at {s}={binding[s] * _PERTURB} failed: {probe.message}"
            continue
        derived.update(k for k, v in probe.sizes.items() if k != s and binding.get(k) != v)
        if not probe.same:
            constant[s] = f"the program's structure changes with {s}"
            continue
        moved[s] = probe.ints
    for s in sorted(derived & set(moved)):
        del moved[s]
    return moved, derived


def _check_point(
    program: Program,
    fits: Mapping[int, list[SizeFit]],
    binding: Mapping[str, int],
    names: list[str],
    verify_input_bytes: int | None,
) -> tuple[dict[str, int], str]:
    """Where the fits are checked, and how the note names it: 3x each size, or halved
    sizes when the inputs there would be over ``verify_input_bytes``."""
    at = {s: binding[s] * _VERIFY for s in names}
    if verify_input_bytes is None or (
        _input_bytes(program, fits, {**binding, **at}) <= verify_input_bytes
    ):
        return at, "3x"
    at = {s: v // 2 if v % 2 == 0 and v >= 4 else v * _VERIFY for s, v in
          ((s, binding[s]) for s in names)}
    return at, ", ".join(f"{s}={v}" for s, v in at.items())


def _input_bytes(
    program: Program, fits: Mapping[int, list[SizeFit]], at: Mapping[str, int]
) -> int:
    """Bytes of ``program``'s inputs at ``at``, their dimensions as the fits predict (the
    literals are numbered as `_literals` numbers them: tensor declarations first)."""
    n = total = 0
    for decl in program.tensors:
        dims: list[int] = []
        for e in decl.shape:
            ints: list[int] = []
            _skeleton(e, ints)
            options = fits.get(n)
            if isinstance(e, IntLit):
                dims.append(options[0].value(at) if options else e.value)
            n += len(ints)
        if decl.role == "input" and len(dims) == len(decl.shape):
            total += math.prod(dims) * decl.dtype.itemsize_bytes
    return total


def _fit_all(
    base_ints: tuple[int, ...],
    moved: dict[str, tuple[int, ...]],
    binding: Mapping[str, int],
    constant: dict[str, str],
) -> dict[int, list[SizeFit]] | None:
    """Candidate fits per moving literal; sizes that make a literal unfittable are
    dropped from ``moved`` (into ``constant``) and the fit redone."""
    while moved:
        fits: dict[int, list[SizeFit]] = {}
        bad: set[str] = set()
        for n, v0 in enumerate(base_ints):
            deps = {s: ints[n] for s, ints in moved.items() if ints[n] != v0}
            if not deps:
                continue
            options = _fits(v0, deps, binding)
            if not options:
                bad.update(deps)
            fits[n] = options
        if not bad:
            return fits
        for s in sorted(bad):  # a set of names: sorted, so reports do not depend on the hash seed
            constant[s] = f"a traced dimension is no simple formula in {s}"
            moved.pop(s, None)
    return None


def _build(
    program: Program,
    binding: Mapping[str, int],
    chosen: Mapping[int, SizeFit],
    constant: Mapping[str, str],
) -> SymbolicProgram:
    used = {s for f in chosen.values() for s, _ in f.terms}
    free = [s for s in binding if s in used]
    taken = {t.name for t in program.tensors} | set(binding)
    derived: dict[SizeFit, str] = {}
    exprs: dict[int, Any] = {}
    decls = [SizeDecl(s, IntLit(binding[s])) for s in free]
    for n in sorted(chosen):
        fit = chosen[n]
        plain = _is_plain_size(fit)
        if plain is not None:
            exprs[n] = Name(plain)
            continue
        if fit not in derived:
            name = base = _readable_name(fit)
            k = 1
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            taken.add(name)
            derived[fit] = name
            decls.append(SizeDecl(name, _expr(fit)))
        exprs[n] = Name(derived[fit])
    tensors, kernels = _substitute((program.tensors, program.kernels), exprs, [0])
    out = replace(program, sizes=(*program.sizes, *decls), tensors=tensors, kernels=kernels)
    reason = None
    try:
        verify_program(out)
    except SolarError as err:
        reason = f"the symbolic program does not verify: {err.message}"
    if reason is not None or any(
        f.value(binding) <= 0 for f in derived
    ):
        return SymbolicProgram(program, {}, dict(constant),
                               reason or "a derived size is not positive")
    return SymbolicProgram(out, {s: binding[s] for s in free}, dict(constant))


def symbolic_notes(result: SymbolicProgram) -> tuple[str, ...]:
    """What the report says about the sizes the formulas follow."""
    notes = []
    if result.symbolic:
        names = ", ".join(result.sizes)
        notes.append(
            f"formulas are symbolic in {names} (derived by re-capturing at 2x each size, "
            f"checked exactly at {result.checked_at})"
        )
    elif result.reason is not None:
        notes.append(f"formulas are constants at the captured sizes: {result.reason}")
    for s, why in result.constant.items():
        if s not in result.derived:
            notes.append(f"size {s} stays constant in the formulas: {why}")
    if result.derived and result.symbolic:
        notes.append(f"{', '.join(result.derived)}: computed in the file from other sizes, "
                     "so the formulas follow those")
    return tuple(notes)
