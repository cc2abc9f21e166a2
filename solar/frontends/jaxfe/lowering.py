"""Entry point of the jaxpr lowering: declare the program interface, walk, write outputs.

Contract: ``JaxCapture -> LoweredProgram``. Inputs (``x0``...) and parameters
(``p_...``) are declared first, then the outputs (``y0``...); each output is the
destination of the equation that produces it, so no copy is needed unless the output
is an input, a view, a literal, a repeated variable or an uncovered op's result (then
one ``output_copy`` kernel writes it). The equations are lowered by `Lowerer`
(`solar.frontends.jaxfe.driver`); importing this module registers every lowering.
"""

from __future__ import annotations

from typing import Any

from solar.frontends.jaxfe import (  # noqa: F401 - importing registers the lowerings
    ops_control,
    ops_decomp,
    ops_elementwise,
    ops_gather,
    ops_linalg,
    ops_reduce,
    ops_shape,
)
from solar.frontends.jaxfe.capture import JaxCapture
from solar.frontends.jaxfe.core import Opaque, Value, ir_dtype
from solar.frontends.jaxfe.driver import Lowerer
from solar.frontends.jaxfe.walk import is_var
from solar.frontends.kit import LoweredProgram, TensorInfo, UnsupportedOpError
from solar.ir import Role

__all__ = ["lower_jaxpr"]


def lower_jaxpr(capture: JaxCapture) -> LoweredProgram:
    """Lower a captured program to Affine Loop IR, one kernel per jaxpr equation.

    Args:
        capture: from `trace_jax_file`.

    Returns:
        The program with its interface names, coverage and notes. Uncovered equations
        never raise: they are reported in ``coverage`` and their outputs become inputs.
    """
    lw = Lowerer(capture.name, strip_root=capture.kind != "function")
    jaxpr = capture.closed_jaxpr.jaxpr
    args: list[Value] = [Opaque((), "") for _ in jaxpr.invars]
    order = [*range(capture.n_params, len(jaxpr.invars)), *range(capture.n_params)]
    for k in order:
        var, name = jaxpr.invars[k], capture.arg_names[k]
        shape = tuple(int(d) for d in var.aval.shape)
        if name is None:
            args[k] = Opaque(shape, str(var.aval.dtype))
            lw.notes.append(f"jaxpr input {k} has dtype {var.aval.dtype}: not representable")
            continue
        role: Role = "param" if k < capture.n_params else "input"
        args[k] = _declare(lw, role, var, name)
    outputs: list[TensorInfo | None] = []
    dest: dict[Any, TensorInfo] = {}
    for k, var in enumerate(jaxpr.outvars):
        name = capture.output_names[k]
        try:
            out = _declare(lw, "output", var, name)
        except UnsupportedOpError:
            lw.notes.append(f"output {name} has dtype {var.aval.dtype}: dropped")
            outputs.append(None)
            continue
        outputs.append(out)
        if is_var(var) and var not in jaxpr.invars and var not in dest:
            dest[var] = out
    consts = [lw.const_operand(c) for c in capture.closed_jaxpr.consts]
    results = lw.lower_jaxpr(jaxpr, consts, args, dest=dest)
    written: set[str] = set()
    for maybe_out, value in zip(outputs, results, strict=True):
        if maybe_out is None:
            continue
        out = maybe_out
        done = (
            isinstance(value, TensorInfo)
            and value.is_storage
            and value.ref.name == out.ref.name
            and out.ref.name not in written
        )
        written.add(out.ref.name)
        if done:
            continue
        if isinstance(value, Opaque):
            lw.notes.append(f"output {out.ref.name} comes from an unrepresentable value")
            continue
        kb = lw.pb.kernel("output_copy")
        lw.copy_into(kb, out, value)
        lw.finish_kernel(kb)
    return lw.lowered(
        lw.pb.build(),
        inputs=capture.arg_names[capture.n_params :],
        params=tuple((name, name) for name in capture.param_names),
        outputs=tuple(o.ref.name if o is not None else None for o in outputs),
        constant_values=lw.constants,
        cond_regions=lw.cond_regions,
    )


def _declare(lw: Lowerer, role: Role, var: Any, name: str) -> TensorInfo:
    shape = tuple(int(d) for d in var.aval.shape)
    return lw.declare(role, ir_dtype(var.aval.dtype), shape, name, exact=True)
