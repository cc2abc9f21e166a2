"""Parameters whose reference values are an index pattern, rewritten as index formulas.

Contract: ``(Program, values by IR name) -> Program`` (pure; the same object when
nothing applies). This is the one step of preparing a program for the bounds that reads
the reference run's arrays (issue 25: the IR package never reads run values), so it
lives beside the run: the preparation stage calls `constant_params` once the reference
values are known, and `solar.ir.elide_masked_work` then folds the formulas (Note
[Constant masks] in `solar.ir.masks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from solar.ir import (
    Access,
    Assign,
    Binary,
    Call,
    Cast,
    DType,
    Expr,
    For,
    IntLit,
    Kernel,
    Lin,
    Name,
    Program,
    Stmt,
    eval_int,
    lit,
    pred_expr,
    resolve_sizes,
)

__all__ = ["constant_params"]


def constant_params(program: Program, values: Mapping[str, object]) -> Program:
    """Turn parameters whose captured values are an index pattern into index formulas.

    A buffer such as ``register_buffer("bias", torch.ones(T, T).tril())`` is known when
    the program is captured. A ``param`` whose value (in ``values``, by IR name, with the
    declared shape at the program's sizes; a symbolic extent stays symbolic in the
    formula, the pattern taken as the buffer's construction, as ``tril`` of a size
    constant is) is constant over its leading dims and, over its last two dims ``(i,
    j)``, one value where ``j - i <= k`` (or ``i - j <= k``) and another elsewhere,
    becomes a temp written from indices by a new first kernel; `elide_masked_work` then
    folds it (Note [Constant masks]). Float and bool values only; a zero-size value is
    left alone.

    Returns:
        The program with such parameters rewritten, or ``program`` itself.
    """

    kernels: list[Kernel] = []
    tensors = list(program.tensors)
    env = resolve_sizes(program)
    for n, t in enumerate(program.tensors):
        v = values.get(t.name)
        if t.role != "param" or not isinstance(v, np.ndarray) or v.size == 0:
            continue  # a zero-size parameter holds no values, so no pattern (brax)
        if tuple(v.shape) != tuple(eval_int(s, env) for s in t.shape):
            continue
        offset = _iota_offset(v, t.shape, t.dtype)
        if offset is not None:
            kernels.append(_iota_kernel(t.name, t.shape[0], t.dtype, offset))
            tensors[n] = replace(t, role="temp")
            continue
        if len(t.shape) < 2 or v.dtype.kind not in "fb":
            continue
        pattern = _tri_pattern(v.reshape(-1, v.shape[-2], v.shape[-1]))
        if pattern is None:
            continue
        kernels.append(_formula_kernel(t.name, t.shape, *pattern))
        tensors[n] = replace(t, role="temp")
    if not kernels:
        return program
    return replace(program, tensors=tuple(tensors), kernels=(*kernels, *program.kernels))


def _iota_offset(v: object, shape: tuple[Expr, ...], dtype: DType) -> int | None:
    """``c`` when ``v`` is the integer vector ``arange(n) + c`` (``n >= 2``), else None.

    Note [Iota parameters]: JAX captures ``jnp.arange(T)`` inside a traced function as a
    constant, which the IR takes as a parameter; a sliding-window mask compares two of
    them (``q_pos >= k_pos`` and ``q_pos <= k_pos + w``). As a formula of its index the
    comparison is an affine guard (Note [Conjunctions]); the values are the same.
    """

    arr = np.asarray(v)
    if (len(shape) != 1 or dtype.is_float or dtype == DType.BOOL or arr.ndim != 1
            or arr.shape[0] < 2 or arr.dtype.kind not in "iu"):
        return None
    offset = int(arr[0])
    if not np.array_equal(arr, np.arange(arr.shape[0]) + offset):
        return None
    return offset


def _iota_kernel(name: str, extent: Expr, dtype: DType, offset: int) -> Kernel:
    value: Expr = Cast(dtype, Name("c0"))
    if offset:
        value = Binary("+" if offset > 0 else "-", value, IntLit(abs(offset)))
    body = For("c0", IntLit(0), extent, (Assign(Access(name, (Name("c0"),)), value),))
    return Kernel(f"{name}_from_indices", (), (body,))


def _tri_pattern(v: object) -> tuple[int | None, int | None, float | bool, float | bool] | None:
    """``(lo, hi, a, b)``: ``v[., i, j]`` is ``a`` where ``lo <= j - i <= hi`` (a bound
    that is None is absent) and ``b`` elsewhere; None for any other pattern.

    Note [Band buffers]: ``tril`` (``j - i <= k``), ``triu`` (``j - i >= k``) and a band
    (``tril().triu(-w)``, a sliding window's mask registered as a buffer: ``-w <= j - i <=
    0``) are each one value on an interval of diagonals and another off it. Before, only
    one-sided patterns were recognised and a band buffer left SDPA dense (3.5x its
    minimum for a 128-wide window over 2,048 tokens).
    """

    arr = np.asarray(v)
    if not (arr == arr[:1]).all():
        return None
    m = arr[0]
    if (m == m.flat[0]).all():
        # Note [Uniform parameters]: one value everywhere is an initializer's (zeros, ones),
        # not a mask: a trainable weight that starts at zero (LoRA's B, a zero-initialised
        # projection, stacked biases) still does its work at every later step, and a
        # select between equal values would only add FLOPs at every read.
        return None
    rows, cols = m.shape
    first = -(rows - 1)
    # the value of diagonal d = j - i, from the first column (d < 0) and row (d >= 0)
    line = np.concatenate([m[:0:-1, 0], m[0]])
    kinds = list(dict.fromkeys(line.tolist()))
    if len(kinds) != 2:
        return None
    i, j = np.indices(m.shape)
    if not np.array_equal(m, line[j - i - first]):
        return None
    values = line.tolist()
    for a, b in (kinds, kinds[::-1]):
        on = [d for d, x in enumerate(values) if x == a]
        if on[-1] - on[0] + 1 == len(on):  # an interval of diagonals
            lo, hi = on[0] + first, on[-1] + first
            return (lo if lo > first else None, hi if hi < cols - 1 else None, a, b)
    return None


def _formula_kernel(name: str, shape: tuple[Expr, ...], lo: int | None, hi: int | None,
                    a: float | bool, b: float | bool) -> Kernel:
    dims = [f"c{d}" for d in range(len(shape))]
    i, j = Name(dims[-2]), Name(dims[-1])
    conds = [pred_expr(Lin.of({j.name: 1, i.name: -1}, -hi))] if hi is not None else []
    if lo is not None:
        conds.append(pred_expr(Lin.of({i.name: 1, j.name: -1}, lo)))
    cond = conds[0]
    for c in conds[1:]:
        cond = Binary("and", cond, c)
    body: Stmt = Assign(Access(name, tuple(Name(d) for d in dims)),
                        Call("select", (cond, lit(a), lit(b))))
    for d, extent in reversed(list(zip(dims, shape, strict=True))):
        body = For(d, IntLit(0), extent, (body,))
    return Kernel(f"{name}_from_indices", (), (body,))
