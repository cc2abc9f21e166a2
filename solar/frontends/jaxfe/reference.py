"""Reference data for validation: run the real JAX program on CPU.

Contract: ``JaxCapture (+ LoweredProgram) -> (inputs, outputs)``, both
``dict[str, np.ndarray]`` keyed by IR tensor name. Inputs hold the seeded
``get_inputs()`` arrays, the Flax parameters initialised from ``PRNGKey(0)``, the
jaxpr constants, and the values of uncovered equations' outputs (which the program
reads as inputs); outputs come from ``jax.jit`` of the program. Uncovered values are
recorded by `eval_with_taps`, an op-by-op interpreter that inlines the same call-like
equations as the lowering, so equation paths mean the same thing in both.

16/8-bit float arrays are handed over as float32 holding the same values (the IR
executor stores those dtypes that way).

For programs too large to run for real, `reference_at_reduced_sizes` re-captures the
program file with its module-level size constants scaled down (the shared search,
`solar.frontends.kit.reduced_reference`) until `program_bytes` fits a byte budget, and
returns the program at those sizes with its reference data (E0511 when none fits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from solar.frontends.jaxfe.capture import JaxCapture, require_jax, trace_jax_file, user_code
from solar.frontends.jaxfe.walk import inline_args, inline_body, is_var
from solar.frontends.kit import (
    NUMPY_WIDENED,
    LoweredProgram,
    Recapture,
    ReducedReference,
    executor_seconds,
    reduced_reference,
)

__all__ = [
    "eval_with_taps",
    "float64_literals",
    "x64_literals",
    "program_bytes",
    "reference_at_reduced_sizes",
    "reference_data",
    "to_numpy",
]

if TYPE_CHECKING:
    from solar.ir import Expr, Program

Tap = tuple[tuple[int, ...], int]
Arrays = dict[str, np.ndarray]


def to_numpy(x: Any) -> np.ndarray:
    """A host numpy array; narrow floats (bf16, fp8, f16 stays f16) widened to float32,
    uint8 as its int8 view (the IR's storage of uint8)."""
    arr = np.asarray(x)
    if arr.dtype == np.uint8:
        return arr.view(np.int8).copy()  # the IR stores uint8 as int8 bits (core.DTYPES)
    if arr.dtype.kind == "V" or (arr.dtype.kind == "f" and arr.dtype.itemsize < 2):
        return arr.astype(np.float32)
    if arr.dtype.name in NUMPY_WIDENED:
        return arr.astype(np.float32)
    return np.array(arr)


def reference_data(
    source: JaxCapture | str | Path,
    *,
    lowered: LoweredProgram | None = None,
    entry: str | None = None,
    float64: bool = False,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run the real program (jit, CPU) and collect everything the IR program reads.

    Args:
        source: a capture, or a program file to capture.
        lowered: the lowering whose extra inputs (constants, uncovered values) to fill;
            lowered from ``source`` when omitted.
        entry: the entry point when ``source`` is a path.
        float64: run it in float64 instead (Note [JAX float64 run]); the lowering must
            have no uncovered values (their op-by-op evaluation follows the fp32 jaxpr).

    Returns:
        ``(inputs, outputs)`` keyed by IR names.

    Raises:
        FrontendError: E0521 if the program raises.
    """
    jax = require_jax()
    capture = source if isinstance(source, JaxCapture) else trace_jax_file(source, entry=entry)
    if lowered is None:
        from solar.frontends.jaxfe.lowering import lower_jaxpr

        lowered = lower_jaxpr(capture)
    params = capture.init_params()
    args = (*params, *capture.input_values)
    if float64:
        assert not lowered.uncovered_values, "no float64 run with uncovered values"
        args = tuple(jax.tree_util.tree_map(_widened, a) for a in args)
        with user_code(f"running {capture.name} in float64"), jax.enable_x64(True):
            outs = jax.jit(capture.flat_fn)(*args)
    else:
        with user_code(f"running {capture.name}"):
            outs = jax.jit(capture.flat_fn)(*args)
    inputs: dict[str, np.ndarray] = {}
    for name, value in zip(capture.arg_names, args, strict=True):
        if name is not None:
            inputs[name] = to_numpy(value)
    for name, value in lowered.constant_values:
        inputs[name] = _widened(to_numpy(value)) if float64 else to_numpy(value)
    taps = [(v.site, v.output) for v in lowered.uncovered_values]
    if taps:
        with user_code(f"evaluating {capture.name} op by op"):
            tapped = eval_with_taps(capture.closed_jaxpr, args, taps)
        for v in lowered.uncovered_values:
            inputs[v.name] = to_numpy(tapped[(v.site, v.output)])
    outputs = {
        name: to_numpy(v) for name, v in zip(lowered.outputs, outs, strict=True) if name is not None
    }
    return inputs, outputs


# Note [JAX float64 run]
# ~~~~~~~~~~~~~~~~~~~~~~
# The float64 re-check (Note [Float64 re-check] in solar/pipeline/validation.py) needs
# the program run again in float64. JAX computes in float32 unless `jax_enable_x64` is
# set; `jax.enable_x64(True)` sets it for the block only, so the function is jitted
# again there on float64 copies of its float32 arguments (exact casts; parameters,
# inputs and jaxpr constants alike). Inside, Python scalars and `jnp.zeros(n)` default
# to float64 too; a dtype the program spells out (`jnp.float32`, `.astype(jnp.float32)`)
# stays what it says, so such a program is re-checked only partly widened (its IR is
# widened everywhere): it may then fail in float64 and the verdict stays the fp32
# failure. Other arguments (PRNG keys, integers) are passed unchanged. A jaxpr stores
# the Python scalars it computes with (a time step `dt = 1e-3`, a stiffness) rounded to
# float32, so the IR's literals are float32 values; the float64 run computes with the
# Python values themselves, and for a chaotic rollout that 5e-8 relative difference in
# `dt` is as large as the fp32 rounding the re-check is meant to take away. The
# re-check's program therefore has each float32 literal replaced by the shortest decimal
# that rounds to it (`float64_literals`: `0.0010000000474974513` -> `0.001`), the Python
# literal a user writes; a literal with more than float32's 9 significant digits
# (`1 / 3`) comes back within float32 precision of what was written and may still
# differ there. Constants the program computes rather than writes are not decimals:
# `jax.nn.gelu`'s `sqrt(2 / pi)`, cast to the input's dtype, is 0.7978845608028654 in
# the float64 run but the shortest decimal of its float32 rounding is 0.7978846, a 3e-8
# relative difference that an Adam step's update turned into float64 mismatches on 20 of
# 59 outputs of a linen transformer. So the program is traced once more in float64
# (`x64_literals`, abstract values, nothing runs) and a float32 literal of the IR that is
# the rounding of one of that trace's float literals (and of no other) becomes that
# literal; the shortest decimal is the fallback.


def x64_literals(capture: JaxCapture) -> dict[float, float]:
    """The float literals of the program traced in float64 (Note [JAX float64 run]), keyed
    by their float32 rounding; a rounding shared by two of them is left out."""
    jax = require_jax()
    from jax.extend.core import jaxprs_in_params

    wide: dict[float, set[float]] = {}

    def collect(jaxpr: Any) -> None:
        for eqn in jaxpr.eqns:
            for atom in eqn.invars:
                value = np.asarray(getattr(atom, "val", None)) if not is_var(atom) else None
                if value is not None and value.dtype.kind == "f" and value.ndim == 0:
                    with np.errstate(over="ignore"):
                        single = float(np.float32(value))
                    if math.isfinite(single):  # float64's `finfo.min` is no float32's -inf
                        wide.setdefault(single, set()).add(float(value))
            for sub in jaxprs_in_params(eqn.params):
                collect(sub)

    args = tuple(
        jax.ShapeDtypeStruct(a.shape, np.float64) if np.dtype(a.dtype) == np.float32 else a
        for a in capture.abstract_args
    )
    with user_code(f"tracing {capture.name} in float64"), jax.enable_x64(True):
        collect(jax.make_jaxpr(capture.flat_fn)(*args).jaxpr)
    return {k: next(iter(v)) for k, v in wide.items() if len(v) == 1}


def float64_literals(program: Program, traced: Mapping[float, float] | None = None) -> Program:
    """``program`` with each float literal that is a float32 value replaced by the
    float64 trace's literal that rounds to it (``traced``, `x64_literals`), else by the
    shortest decimal that rounds to it (Note [JAX float64 run]): a jaxpr holds a Python
    scalar (``dt = 1e-3``) rounded to float32 (``0.0010000000474974513``), while the
    float64 run computes with the Python value itself (``0.001``)."""
    traced = traced or {}
    import dataclasses

    from solar.ir import FloatLit
    from solar.ir.traversal import map_expr, map_exprs

    def decimal(e: Expr) -> Expr | None:
        if not isinstance(e, FloatLit) or not math.isfinite(e.value):
            return None
        single = np.float32(e.value)
        if float(single) != e.value:
            return None  # not a float32 value: written wider, kept
        if e.value in traced:
            return dataclasses.replace(e, value=traced[e.value])
        shortest = np.format_float_positional(single, unique=True, trim="-")
        return dataclasses.replace(e, value=float(shortest))

    def stmt(e: Expr) -> Expr:
        return map_expr(e, decimal)

    kernels = tuple(
        dataclasses.replace(k, body=tuple(map_exprs(st, stmt) for st in k.body))
        for k in program.kernels
    )
    return dataclasses.replace(program, kernels=kernels)


def _widened(x: Any) -> Any:
    """A float32 array as float64 (exact); anything else unchanged."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None and np.dtype(dtype) == np.float32:
        return np.asarray(x, dtype=np.float64)
    return x


def program_bytes(capture: JaxCapture) -> int:
    """Bytes a real run may touch: its inputs and parameters, and every top-level
    equation's outputs (a call's body counts once, through the call's outputs)."""
    jaxpr = capture.closed_jaxpr.jaxpr
    avals = [v.aval for v in jaxpr.invars]
    avals += [v.aval for eqn in jaxpr.eqns for v in eqn.outvars]
    return sum(_aval_bytes(a) for a in avals)


def _aval_bytes(aval: Any) -> int:
    shape = getattr(aval, "shape", None)
    if shape is None:
        return 0  # tokens and other non-array values
    itemsize = getattr(getattr(aval, "dtype", None), "itemsize", 8)
    return math.prod(int(d) for d in shape) * int(itemsize)


def reference_at_reduced_sizes(
    path: str | Path,
    budget_bytes: int,
    *,
    entry: str | None = None,
    start: Mapping[str, int] | None = None,
    capture: JaxCapture | None = None,
    budget_seconds: float | None = None,
) -> ReducedReference:
    """Lower a program file at sizes whose real run (`program_bytes`) fits ``budget_bytes``.

    `reduced_reference` over the file's size constants (``path``, ``budget_bytes``,
    ``start``, ``capture``: as there); ``entry`` is what to capture (default ``f``,
    else ``Model``). With ``budget_seconds``, the executor's predicted check of the
    program must fit it, and its memory estimate the executor's budget
    (`solar.frontends.kit.executor_seconds`).

    Returns:
        ``(lowered, inputs, outputs, description, built)``; the description says which
        constants were scaled (or that the full size fits).

    Raises:
        FrontendError: E0511 when no reduction fits; E0520-E0527 loading, capture and
            the reference run.
    """
    from solar.frontends.jaxfe.lowering import lower_jaxpr

    def capture_with(overrides: Mapping[str, int]) -> JaxCapture:
        return trace_jax_file(path, entry=entry, overrides=overrides)

    def lowered_reference(cap: JaxCapture) -> tuple[LoweredProgram, Arrays, Arrays]:
        lowered = lower_jaxpr(cap)
        return (lowered, *reference_data(cap, lowered=lowered))

    def check_seconds(cap: JaxCapture) -> float:
        return executor_seconds(lower_jaxpr(cap).program, budget_bytes)

    seconds = check_seconds if budget_seconds is not None else None
    recapture = Recapture(capture_with, _sizes, program_bytes, lowered_reference, seconds)
    return reduced_reference(
        Path(path), recapture, budget_bytes, start=start, capture=capture,
        budget_seconds=budget_seconds if budget_seconds is not None else math.inf,
    )


def _sizes(capture: JaxCapture) -> Mapping[str, int]:
    return capture.sizes


def eval_with_taps(closed: Any, args: Sequence[Any], taps: Sequence[Tap]) -> dict[Tap, Any]:
    """Evaluate a closed jaxpr op by op, recording the outputs of the equations at ``taps``.

    Args:
        closed: the closed jaxpr.
        args: concrete values of its inputs.
        taps: ``(path, out_index)`` pairs; a path lists equation indices from the top level
            through inlined call bodies (as `UncoveredValue.site`).

    Returns:
        The recorded values.
    """
    wanted: dict[tuple[int, ...], set[int]] = {}
    for path, k in taps:
        wanted.setdefault(path, set()).add(k)
    prefixes = {path[:n] for path in wanted for n in range(1, len(path))}
    found: dict[Tap, Any] = {}
    _eval(closed.jaxpr, list(closed.consts), list(args), (), wanted, prefixes, found)
    return found


def _eval(
    jaxpr: Any,
    consts: Sequence[Any],
    args: Sequence[Any],
    path: tuple[int, ...],
    wanted: Mapping[tuple[int, ...], set[int]],
    prefixes: set[tuple[int, ...]],
    found: dict[Tap, Any],
) -> list[Any]:
    env: dict[Any, Any] = {}
    for v, c in zip(jaxpr.constvars, consts, strict=True):
        env[v] = c
    for v, x in zip(jaxpr.invars, args, strict=True):
        env[v] = x

    def value(a: Any) -> Any:
        return env[a] if is_var(a) else a.val

    for n, eqn in enumerate(jaxpr.eqns):
        here = (*path, n)
        ins = [value(a) for a in eqn.invars]
        body = inline_body(eqn) if here in prefixes else None
        if body is not None:
            sub, sub_consts = body
            outs = _eval(sub, sub_consts, inline_args(eqn, ins), here, wanted, prefixes, found)
        else:
            res = _bind(eqn, ins)
            outs = list(res) if eqn.primitive.multiple_results else [res]
        for k in wanted.get(here, ()):
            found[(here, k)] = outs[k]
        for v, o in zip(eqn.outvars, outs, strict=True):
            if is_var(v):
                env[v] = o
    return [value(v) for v in jaxpr.outvars]


def _bind(eqn: Any, ins: Sequence[Any]) -> Any:
    """Apply an equation's primitive to concrete values (as ``jax.core.eval_jaxpr`` does)."""
    got = eqn.primitive.get_bind_params(eqn.params)
    if isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict):
        subfuns, params = got  # older jax: (subfuns, params)
        return eqn.primitive.bind(*subfuns, *ins, **params)
    with eqn.ctx.manager:
        return eqn.primitive.bind(*ins, **got)
