"""Independent numpy references for the hand-written IR samples (samples/ir/*.alir).

Contract: `REFERENCES[stem](arrays) -> outputs` maps the sample's inputs and params (by their
IR names, at the sample's default sizes) to its outputs (by IR name), computed with plain
numpy in float64 and returned as float32 arrays, without reading the IR. `make_inputs` builds
random inputs/params of the declared shapes and dtypes, drawing integer tensors that are used
as subscripts (``E[idx[b, s], d]``) from the valid range of the dimension they index. The
executor tests compare the executor against these references; nothing here runs the IR.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from solar.ir import (
    Access,
    Assign,
    DType,
    Program,
    Reduce,
    accesses,
    eval_int,
    resolve_sizes,
    walk_exprs,
    walk_stmts,
)

__all__ = ["NUMPY_DTYPES", "REFERENCES", "make_inputs"]

Arrays = Mapping[str, np.ndarray]
Reference = Callable[[Arrays], dict[str, np.ndarray]]

NUMPY_DTYPES: dict[DType, np.dtype] = {
    DType.F64: np.dtype(np.float64),
    DType.F32: np.dtype(np.float32),
    DType.F16: np.dtype(np.float16),
    # numpy has no bf16/fp8: inputs of these dtypes are drawn as float32.
    DType.BF16: np.dtype(np.float32),
    DType.F8E4M3: np.dtype(np.float32),
    DType.F8E5M2: np.dtype(np.float32),
    DType.I64: np.dtype(np.int64),
    DType.I32: np.dtype(np.int32),
    DType.I8: np.dtype(np.int8),
    DType.BOOL: np.dtype(np.bool_),
}

_DEFAULT_INT_RANGE = 4
_erf = np.frompyfunc(math.erf, 1, 1)


def _f64(arrays: Arrays) -> dict[str, np.ndarray]:
    return {k: (v.astype(np.float64) if v.dtype.kind == "f" else v) for k, v in arrays.items()}


def _f32(**outputs: np.ndarray) -> dict[str, np.ndarray]:
    return {k: np.asarray(v, dtype=np.float32) for k, v in outputs.items()}


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return np.asarray(e / e.sum(axis=axis, keepdims=True))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


def _windows(x: np.ndarray, k: int, stride: int, dilation: int) -> np.ndarray:
    """Sliding k x k windows over the last two axes: shape (..., Ho, Wo, k, k)."""
    span = dilation * (k - 1) + 1
    win = np.lib.stride_tricks.sliding_window_view(x, (span, span), axis=(-2, -1))
    return win[..., ::stride, ::stride, ::dilation, ::dilation]


def _conv2d(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    *,
    stride: int,
    pad: int,
    dilation: int,
    groups: int,
) -> np.ndarray:
    c = x.shape[1]
    f, cg, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = _windows(xp, k, stride, dilation)  # n, c, ho, wo, k, k
    fg = f // groups
    out = [
        np.einsum("nchwrs,fcrs->nfhw", win[:, g * cg : (g + 1) * cg], w[g * fg : (g + 1) * fg])
        for g in range(groups)
    ]
    assert c == groups * cg
    return np.asarray(np.concatenate(out, axis=1) + b[None, :, None, None])


def _matmul(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    return _f32(C=x["A"] @ x["B"])


def _linear_bias_gelu(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    h = x["X"] @ x["W"].T + x["b"]
    return _f32(Y=0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)).astype(np.float64)))


def _conv2d_ref(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    y = _conv2d(x["X"], x["Wt"], x["bias"], stride=2, pad=1, dilation=2, groups=2)
    return _f32(Y=y)


def _depthwise_conv2d(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    c = x["X"].shape[1]
    return _f32(Y=_conv2d(x["X"], x["Wt"], x["bias"], stride=1, pad=1, dilation=1, groups=c))


def _maxpool2d(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)["X"]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    return _f32(Y=_windows(xp, 3, 2, 1).max(axis=(-2, -1)))


def _avgpool2d(a: Arrays) -> dict[str, np.ndarray]:
    # count_include_pad=True: zero padding, and every window divides by 9.
    x = _f64(a)["X"]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    return _f32(Y=_windows(xp, 3, 2, 1).mean(axis=(-2, -1)))


def _softmax_ref(a: Arrays) -> dict[str, np.ndarray]:
    return _f32(Y=_softmax(_f64(a)["X"], axis=-1))


def _layernorm(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    xx = x["X"]
    mu = xx.mean(axis=-1, keepdims=True)
    var = xx.var(axis=-1, keepdims=True)
    return _f32(Y=(xx - mu) / np.sqrt(var + 1e-5) * x["gamma"] + x["beta"])


def _batchnorm(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    xx = x["X"]
    mu = xx.mean(axis=(0, 2, 3), keepdims=True)
    var = xx.var(axis=(0, 2, 3), keepdims=True)
    g = x["gamma"][None, :, None, None]
    b = x["beta"][None, :, None, None]
    return _f32(Y=(xx - mu) / np.sqrt(var + 1e-5) * g + b)


def _rmsnorm(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    xx = x["X"]
    rms = np.sqrt((xx * xx).mean(axis=-1, keepdims=True) + 1e-6)
    return _f32(Y=xx / rms * x["weight"])


def _attention(*, causal: bool) -> Reference:
    def ref(a: Arrays) -> dict[str, np.ndarray]:
        x = _f64(a)
        q, k, v = x["Q"], x["K"], x["V"]
        s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
        if causal:
            length = s.shape[-1]
            s = np.where(np.tril(np.ones((length, length), dtype=bool)), s, -np.inf)
        return _f32(O=_softmax(s, axis=-1) @ v)

    return ref


def _cumsum(a: Arrays) -> dict[str, np.ndarray]:
    return _f32(Y=np.cumsum(_f64(a)["X"], axis=1))


def _embedding(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    return _f32(Y=x["E"][x["idx"]])


def _lstm_cell(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    h, c = x["h0"].copy(), x["c0"].copy()
    hd = h.shape[1]
    ys = []
    for xt in x["X"]:
        z = xt @ x["Wih"].T + h @ x["Whh"].T + x["bih"] + x["bhh"]
        i, f, g, o = (z[:, q * hd : (q + 1) * hd] for q in range(4))
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        ys.append(h)
    return _f32(Y=np.stack(ys), h=h, c=c)


def _reshape_permute(a: Arrays) -> dict[str, np.ndarray]:
    xx = _f64(a)["X"]
    b, s, e = xx.shape
    return _f32(P=xx.reshape(b, s, e // 8, 8).transpose(0, 2, 1, 3))


def _mse_loss(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    return _f32(loss=np.mean((x["X"] - x["T"]) ** 2))


def _pixel_shuffle(a: Arrays) -> dict[str, np.ndarray]:
    xx = _f64(a)["X"]
    n, c4, h, w = xx.shape
    c = c4 // 4
    y = xx.reshape(n, c, 2, 2, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c, 2 * h, 2 * w)
    return _f32(Y=y)


def _triangular_matmul(a: Arrays) -> dict[str, np.ndarray]:
    x = _f64(a)
    return _f32(C=np.tril(x["A"]) @ x["B"])


def _ln(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    return np.asarray((x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) * w + b)


def _transformer_block(a: Arrays) -> dict[str, np.ndarray]:
    """GPT block: pre-LN, causal multi-head attention, projection, tanh-GELU MLP, residuals."""
    x = _f64(a)
    h = x["x0"]
    batch, seq, d = h.shape
    heads = 4  # samples/ir/transformer_block.alir: H = 4, Dh = 8
    qkv = _ln(h, x["p_ln1_weight"], x["p_ln1_bias"]) @ x["p_qkv_weight"].T + x["p_qkv_bias"]
    q, k, v = (
        qkv[..., i * d : (i + 1) * d].reshape(batch, seq, heads, d // heads).transpose(0, 2, 1, 3)
        for i in range(3)
    )
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(d // heads)
    s = np.where(np.tril(np.ones((seq, seq), dtype=bool)), s, -np.inf)
    att = (_softmax(s, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, d)
    r1 = h + att @ x["p_proj_weight"].T + x["p_proj_bias"]
    f = _ln(r1, x["p_ln2_weight"], x["p_ln2_bias"]) @ x["p_fc_weight"].T + x["p_fc_bias"]
    g = 0.5 * f * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (f + 0.044715 * f**3)))
    return _f32(y0=r1 + g @ x["p_out_weight"].T + x["p_out_bias"])


REFERENCES: dict[str, Reference] = {
    "attention": _attention(causal=False),
    "attention_causal": _attention(causal=True),
    "avgpool2d": _avgpool2d,
    "batched_matmul": _matmul,
    "batchnorm": _batchnorm,
    "conv2d": _conv2d_ref,
    "cumsum": _cumsum,
    "depthwise_conv2d": _depthwise_conv2d,
    "embedding": _embedding,
    "layernorm": _layernorm,
    "linear_bias_gelu": _linear_bias_gelu,
    "lstm_cell": _lstm_cell,
    "matmul": _matmul,
    "maxpool2d": _maxpool2d,
    "mse_loss": _mse_loss,
    "pixel_shuffle": _pixel_shuffle,
    "reshape_permute": _reshape_permute,
    "rmsnorm": _rmsnorm,
    "softmax": _softmax_ref,
    "transformer_block": _transformer_block,
    "triangular_matmul": _triangular_matmul,
}


def _index_ranges(program: Program, sizes: Mapping[str, int]) -> dict[str, int]:
    """Exclusive upper bound for each integer tensor that appears as a whole subscript."""
    ranges: dict[str, int] = {}
    for kernel in program.kernels:
        for stmt, _ in walk_stmts(kernel.body):
            if not isinstance(stmt, Assign | Reduce):
                continue
            reads, write = accesses(stmt)
            for acc in (*reads, write):
                for sub in walk_exprs(acc):
                    if not isinstance(sub, Access):
                        continue
                    shape = program.tensor(sub.tensor).shape
                    for dim, index in zip(shape, sub.indices, strict=True):
                        if isinstance(index, Access):
                            bound = eval_int(dim, sizes)
                            ranges[index.tensor] = min(ranges.get(index.tensor, bound), bound)
    return ranges


def make_inputs(name: str, program: Program, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random inputs and params of ``program`` at its default sizes.

    Floats are standard normal; integer tensors used as subscripts are uniform over the
    indexed dimension, other integers over ``0 .. 4``; bools are fair coins.

    Args:
        name: the sample name (file stem); kept for per-sample special cases.
        program: the parsed sample.
        rng: the random generator (seed it for reproducible tests).

    Returns:
        One array per input/param, keyed by its IR name.
    """
    del name  # every current sample is covered by the generic rules
    sizes = resolve_sizes(program)
    ranges = _index_ranges(program, sizes)
    arrays: dict[str, np.ndarray] = {}
    for decl in program.tensors_with_role("input", "param"):
        shape = tuple(eval_int(d, sizes) for d in decl.shape)
        dtype = NUMPY_DTYPES[decl.dtype]
        if decl.dtype.is_float:
            arrays[decl.name] = rng.standard_normal(shape).astype(dtype)
        elif decl.dtype is DType.BOOL:
            arrays[decl.name] = rng.random(shape) < 0.5
        else:
            high = ranges.get(decl.name, _DEFAULT_INT_RANGE)
            arrays[decl.name] = rng.integers(0, high, size=shape).astype(dtype)
    return arrays
