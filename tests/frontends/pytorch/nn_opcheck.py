"""Test support: lower one ATen call through the lowering table and compare with torch.

`check_op(op, *args, **kwargs)` runs the real torch op on the given tensors, declares
each tensor argument as a program input and each tensor result as an output, calls the
registered lowering exactly as the driver does (`LowerCtx` + `OpCall`), verifies the
program, executes it with `solar.validate.execute_program` and compares every output
with torch's. It returns the program so tests can also inspect FLOP-relevant structure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from solar.frontends.kit import IR_DTYPES, BuilderKernels, LowerCtx, ProgramBuilder, TensorInfo
from solar.frontends.pytorch.registry import LOWERINGS, OpCall
from solar.ir import Access, For, If, Program, Reduce, print_expr, verify_program
from solar.ir.traversal import walk_exprs

torch = pytest.importorskip("torch")

from solar.validate import execute_program  # noqa: E402

_DTYPES = {getattr(torch, name): dtype for name, dtype in IR_DTYPES.items()}


def _to_numpy(t: Any) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        t = t.float()
    return np.asarray(t.detach().cpu().numpy())


def lower_call(
    op: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], results: Any
) -> tuple[Program, dict[str, np.ndarray], list[str | None]]:
    """Build the one-op program for ``op(*args, **kwargs)`` with the given torch results.

    Returns:
        The program, its input arrays by name, and the output names (``None`` where a
        result is not a tensor or is empty).
    """
    pb = ProgramBuilder(str(op).replace(".", "_"))
    inputs: dict[str, np.ndarray] = {}
    seen: dict[int, TensorInfo] = {}

    def conv(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            if id(x) in seen:  # one tensor passed twice is one program input, as in a capture
                return seen[id(x)]
            ref = pb.tensor("input", _DTYPES[x.dtype], tuple(x.shape), "x")
            inputs[ref.name] = _to_numpy(x)
            seen[id(x)] = TensorInfo(ref, tuple(x.shape), _DTYPES[x.dtype])
            return seen[id(x)]
        if isinstance(x, list | tuple):
            return tuple(conv(v) for v in x)
        return x

    cargs = tuple(conv(a) for a in args)
    ckw = {k: conv(v) for k, v in kwargs.items()}
    flat = list(results) if isinstance(results, tuple | list) else [results]
    outs: list[TensorInfo | None] = []
    for r in flat:
        if isinstance(r, torch.Tensor) and r.numel() > 0:
            ref = pb.tensor("output", _DTYPES[r.dtype], tuple(r.shape), "out")
            outs.append(TensorInfo(ref, tuple(r.shape), _DTYPES[r.dtype]))
        else:
            outs.append(None)
    call = OpCall(str(op), cargs, ckw, tuple(outs))
    fn = LOWERINGS.find(str(op))
    assert fn is not None, f"no lowering for {op}"
    host = BuilderKernels(pb)
    ctx = LowerCtx(host, call.op)
    ret = fn(ctx, call)
    assert ret is None, "nn lowerings emit kernels, not views"
    assert len(ctx.kernels) == 1, f"{op} emitted {len(ctx.kernels)} kernels"
    host.finish()
    return pb.build(), inputs, [o.ref.name if o is not None else None for o in outs]


def check_op(
    op: Any,
    *args: Any,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    skip_outputs: tuple[int, ...] = (),
    expected: Any = None,
    **kwargs: Any,
) -> Program:
    """Lower ``op(*args, **kwargs)``, execute it, and compare with torch.

    Args:
        op: an ``torch.ops.aten`` overload.
        *args: its positional arguments (torch tensors and Python values).
        rtol: relative tolerance.
        atol: absolute tolerance.
        skip_outputs: result positions not compared (e.g. unspecified scratch outputs).
        expected: the results, for ops torch has no CPU kernel for (CUDA-path siblings).
        **kwargs: its keyword arguments.

    Returns:
        The lowered program.
    """
    if expected is not None:
        results = expected
    else:
        with torch.no_grad():
            results = op(*args, **kwargs)
    program, inputs, names = lower_call(op, args, kwargs, results)
    verify_program(program)
    got = execute_program(program, inputs)
    flat = list(results) if isinstance(results, tuple | list) else [results]
    for pos, (name, want) in enumerate(zip(names, flat, strict=True)):
        if name is None or pos in skip_outputs:
            continue
        w = _to_numpy(want)
        g = np.asarray(got[name])
        assert g.shape == w.shape, f"output {pos}: shape {g.shape} != {w.shape}"
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w, err_msg=f"output {pos} of {op}")
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"output {pos} of {op}")
    return program


def reduce_points(program: Program) -> int:
    """How many times the program's reduction statements execute (guards honoured).

    Brute force over every loop nest, for tiny programs: bounds and affine guards are
    evaluated from their printed form (the IR's index syntax is valid Python). Value-
    dependent guards (ones that read tensors) are treated as true.
    """
    count = 0

    def ev(expr: Any, env: dict[str, int]) -> Any:
        return eval(print_expr(expr), {"min": min, "max": max}, dict(env))

    def run(stmts: Any, env: dict[str, int]) -> None:
        nonlocal count
        for st in stmts:
            if isinstance(st, Reduce):
                count += 1
            elif isinstance(st, For):
                for v in range(ev(st.lo, env), ev(st.hi, env), st.step):
                    run(st.body, {**env, st.var: v})
            elif isinstance(st, If) and (
                any(isinstance(e, Access) for e in walk_exprs(st.cond)) or ev(st.cond, env)
            ):
                run(st.body, env)

    for kernel in program.kernels:
        run(kernel.body, {})
    return count
