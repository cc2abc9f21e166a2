"""Backward-op lowerings (ops_backward.py) against torch's own backward kernels."""

from __future__ import annotations

import pytest
from nn_opcheck import check_op

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

A = torch.ops.aten


def _r(*shape: int) -> object:
    return torch.randn(*shape)


@pytest.mark.parametrize(
    ("op", "args"),
    [
        (A.threshold_backward.default, (_r(3, 5), _r(3, 5), 0.0)),
        (A.threshold_backward.default, (_r(3, 5), _r(3, 5), 0.25)),
        (A.sigmoid_backward.default, (_r(4, 6), torch.rand(4, 6))),
        (A.tanh_backward.default, (_r(4, 6), torch.rand(4, 6) * 2 - 1)),
        (A.silu_backward.default, (_r(4, 6), _r(4, 6))),
        (A.gelu_backward.default, (_r(4, 6), _r(4, 6))),
        (A.hardtanh_backward.default, (_r(4, 6), _r(4, 6) * 2, -1.0, 1.0)),
        (A.leaky_relu_backward.default, (_r(4, 6), _r(4, 6), 0.01, False)),
        (A.native_dropout_backward.default, (_r(4, 6), torch.rand(4, 6) > 0.5, 2.0)),
        (A.mse_loss_backward.default, (torch.tensor(1.5), _r(4, 6), _r(4, 6), 1)),
        (A.mse_loss_backward.default, (_r(4, 6), _r(4, 6), _r(4, 6), 0)),
        (A._softmax_backward_data.default, (_r(3, 4, 5), torch.rand(3, 4, 5), 1, torch.float32)),
        (A._softmax_backward_data.default, (_r(3, 5), torch.rand(3, 5), -1, torch.float32)),
        (A._log_softmax_backward_data.default, (_r(3, 5), _r(3, 5), 1, torch.float32)),
        (A._log_softmax_backward_data.default, (_r(7), _r(7), 0, torch.float32)),
    ],
)
def test_elementwise_and_rowwise(op: object, args: tuple[object, ...]) -> None:
    check_op(op, *args)


def test_gelu_tanh_backward() -> None:
    check_op(A.gelu_backward.default, _r(4, 6), _r(4, 6), approximate="tanh")


@pytest.mark.parametrize(("reduction", "weighted"), [(0, False), (1, False), (1, True), (2, True)])
def test_nll_loss_backward(reduction: int, weighted: bool) -> None:
    x = torch.randn(6, 5).log_softmax(1)
    t = torch.tensor([0, 4, 2, 2, 1, 3])
    w = torch.rand(5) + 0.5 if weighted else None
    _, total = A.nll_loss_forward.default(x, t, w, reduction, -100)
    g = torch.randn(6) if reduction == 0 else torch.tensor(0.7)
    check_op(A.nll_loss_backward.default, g, x, t, w, reduction, -100, total)


@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 8), (5,)])
def test_layer_norm_backward(shape: tuple[int, ...]) -> None:
    x = torch.randn(*shape)
    d = shape[-1]
    w, b = torch.rand(d) + 0.5, torch.randn(d)
    _, mean, rstd = A.native_layer_norm.default(x, [d], w, b, 1e-5)
    check_op(
        A.native_layer_norm_backward.default,
        torch.randn(*shape),
        x,
        [d],
        mean,
        rstd,
        w,
        b,
        [True, True, True],
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_backward(train: bool) -> None:
    x = torch.randn(4, 3, 5, 2)
    w, b = torch.rand(3) + 0.5, torch.randn(3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    _, sm, si = A.native_batch_norm.default(x, w, b, rm.clone(), rv.clone(), train, 0.1, 1e-5)
    check_op(
        A.native_batch_norm_backward.default,
        torch.randn_like(x),
        x,
        w,
        rm,
        rv,
        sm,
        si,
        train,
        1e-5,
        [True, True, True],
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize(
    ("xs", "ws", "stride", "padding", "dilation", "groups"),
    [
        ((2, 4, 7, 6), (6, 4, 3, 3), [1, 1], [1, 1], [1, 1], 1),
        ((2, 4, 9, 8), (4, 2, 3, 2), [2, 1], [0, 1], [1, 2], 2),
        ((2, 3, 10), (5, 3, 4), [3], [2], [1], 1),
    ],
)
def test_convolution_backward(
    xs: tuple[int, ...],
    ws: tuple[int, ...],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    groups: int,
) -> None:
    x, w = torch.randn(*xs), torch.randn(*ws)
    y = A.convolution.default(
        x, w, None, stride, padding, dilation, False, [0] * len(stride), groups
    )
    check_op(
        A.convolution_backward.default,
        torch.randn_like(y),
        x,
        w,
        [ws[0]],
        stride,
        padding,
        dilation,
        False,
        [0] * len(stride),
        groups,
        [True, True, True],
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize(
    ("padding_idx", "by_freq"), [(-1, False), (2, False), (-1, True), (2, True), (5, True)]
)
def test_embedding_dense_backward(padding_idx: int, by_freq: bool) -> None:
    ids = torch.tensor([[0, 2, 5], [2, 2, 1]])
    g = torch.randn(2, 3, 4)
    check_op(A.embedding_dense_backward.default, g, ids, 7, padding_idx, by_freq)


def test_select_and_slice_backward() -> None:
    check_op(A.select_backward.default, torch.randn(3, 5), [3, 4, 5], 1, 2)
    check_op(A.select_backward.default, torch.randn(3, 4), [3, 4, 5], -1, -1)
    check_op(A.slice_backward.default, torch.randn(3, 2, 5), [3, 7, 5], 1, 1, 5, 2)


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "ceil", "include_pad", "override"),
    [
        ((2, 3, 8, 8), [2, 2], [2, 2], [0, 0], False, True, None),
        ((1, 2, 7, 6), [3, 3], [2, 1], [1, 1], False, True, None),
        # windows of varying size: padding excluded from the count, ceil_mode's last
        # window hanging over the edge (timm's ResNet-D shortcut), both, an override
        ((1, 2, 7, 6), [3, 3], [2, 1], [1, 1], False, False, None),
        ((2, 3, 7, 5), [2, 2], [2, 2], [0, 0], True, False, None),
        ((1, 2, 9, 7), [3, 2], [2, 2], [1, 1], True, True, None),
        ((1, 2, 9, 7), [3, 3], [2, 2], [1, 0], True, False, None),
        ((1, 2, 7, 6), [3, 3], [2, 2], [1, 1], True, False, 5),
    ],
)
def test_avg_pool2d_backward(
    shape: tuple[int, ...],
    kernel: list[int],
    stride: list[int],
    padding: list[int],
    ceil: bool,
    include_pad: bool,
    override: int | None,
) -> None:
    x = torch.randn(*shape)
    y = A.avg_pool2d.default(x, kernel, stride, padding, ceil, include_pad, override)
    check_op(
        A.avg_pool2d_backward.default,
        torch.randn_like(y),
        x,
        kernel,
        stride,
        padding,
        ceil,
        include_pad,
        override,
    )


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "ceil", "include_pad"),
    [
        ((1, 2, 4, 5, 6), [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True),
        ((1, 2, 5, 5, 6), [3, 2, 3], [2, 2, 2], [1, 0, 1], True, False),
    ],
)
def test_avg_pool3d_backward(
    shape: tuple[int, ...],
    kernel: list[int],
    stride: list[int],
    padding: list[int],
    ceil: bool,
    include_pad: bool,
) -> None:
    x = torch.randn(*shape)
    y = A.avg_pool3d.default(x, kernel, stride, padding, ceil, include_pad, None)
    args = (kernel, stride, padding, ceil, include_pad, None)
    check_op(A.avg_pool3d_backward.default, torch.randn_like(y), x, *args)


@pytest.mark.parametrize(
    ("op", "x_shape", "out_size"),
    [
        (A._adaptive_avg_pool2d_backward.default, (2, 3, 8, 6), (2, 3)),
        (A._adaptive_avg_pool2d_backward.default, (2, 3, 5, 7), (1, 1)),
        # windows of varying size (and overlapping): 7 -> 3, 5 -> 2, 6 -> 4
        (A._adaptive_avg_pool2d_backward.default, (2, 3, 7, 5), (3, 2)),
        (A._adaptive_avg_pool2d_backward.default, (1, 2, 6, 6), (4, 3)),
        (A._adaptive_avg_pool3d_backward.default, (1, 2, 5, 4, 6), (2, 2, 4)),
    ],
)
def test_adaptive_avg_pool_backward(
    op: object, x_shape: tuple[int, ...], out_size: tuple[int, ...]
) -> None:
    x = torch.randn(*x_shape)
    fwd = A._adaptive_avg_pool2d if len(out_size) == 2 else A._adaptive_avg_pool3d
    y = fwd.default(x, list(out_size))
    check_op(op, torch.randn_like(y), x)


@pytest.mark.parametrize(
    ("causal", "masked", "heads", "kv_heads", "n_k"),
    [
        (False, False, 3, 3, 6),
        (True, False, 3, 3, 6),
        (False, True, 3, 3, 6),
        (False, False, 3, 3, 5),  # cross attention, L != S
        # grouped-query heads (enable_gqa): 4 query heads over 2 or 1 key/value heads
        (False, False, 4, 2, 6),
        (True, False, 4, 2, 6),
        (False, True, 4, 1, 7),
    ],
)
def test_flash_attention_backward(
    causal: bool, masked: bool, heads: int, kv_heads: int, n_k: int
) -> None:
    q = torch.randn(2, heads, 6, 8)
    k, v = torch.randn(2, kv_heads, n_k, 8), torch.randn(2, kv_heads, n_k, 8)
    mask = torch.randn(6, n_k) if masked else None
    out, lse = A._scaled_dot_product_flash_attention_for_cpu.default(
        q, k, v, 0.0, causal, attn_mask=mask
    )
    check_op(
        A._scaled_dot_product_flash_attention_for_cpu_backward.default,
        torch.randn_like(out),
        q,
        k,
        v,
        out,
        lse,
        0.0,
        causal,
        attn_mask=mask,
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding"),
    [((2, 3, 8, 8), [2, 2], [2, 2], [0, 0]), ((1, 2, 7, 6), [3, 3], [1, 2], [1, 1])],
)
def test_max_pool2d_backward(
    shape: tuple[int, ...], kernel: list[int], stride: list[int], padding: list[int]
) -> None:
    x = torch.randn(*shape)
    y, idx = A.max_pool2d_with_indices.default(x, kernel, stride, padding, [1, 1], False)
    check_op(
        A.max_pool2d_with_indices_backward.default,
        torch.randn_like(y),
        x,
        kernel,
        stride,
        padding,
        [1, 1],
        False,
        idx,
    )


@pytest.mark.parametrize(
    ("op", "args"),
    [
        (A.hardswish_backward.default, (_r(4, 9), torch.linspace(-5, 5, 36).reshape(4, 9))),
        (A.hardsigmoid_backward.default, (_r(4, 9), torch.linspace(-5, 5, 36).reshape(4, 9))),
        (A.softplus_backward.default, (_r(4, 6), _r(4, 6) * 10, 1.0, 20.0)),
        (A.softplus_backward.default, (_r(4, 6), _r(4, 6) * 10, 2.0, 5.0)),
        (A.elu_backward.default, (_r(4, 6), 1.0, 1.0, 1.0, False, _r(4, 6))),
        (A.elu_backward.default, (_r(4, 6), 1.5, 1.05, 1.0, True, _r(4, 6))),
    ],
)
def test_more_backward_ops(op: object, args: tuple[object, ...]) -> None:
    check_op(op, *args)


def test_log_sigmoid_backward() -> None:
    x = torch.randn(4, 6) * 4
    _, buffer = A.log_sigmoid_forward.default(x)
    check_op(A.log_sigmoid_backward.default, torch.randn(4, 6), x, buffer)


@pytest.mark.parametrize(
    ("xs", "ws", "stride", "padding", "out_pad", "groups"),
    [
        ((2, 4, 5, 4), (4, 3, 3, 3), [2, 2], [1, 0], [1, 0], 1),
        ((1, 4, 6), (4, 2, 3), [1], [1], [0], 2),
    ],
)
def test_transposed_convolution_backward(
    xs: tuple[int, ...],
    ws: tuple[int, ...],
    stride: list[int],
    padding: list[int],
    out_pad: list[int],
    groups: int,
) -> None:
    x, w = torch.randn(*xs), torch.randn(*ws)
    dil = [1] * len(stride)
    y = A.convolution.default(x, w, None, stride, padding, dil, True, out_pad, groups)
    check_op(
        A.convolution_backward.default,
        torch.randn_like(y),
        x,
        w,
        [ws[1] * groups],
        stride,
        padding,
        dil,
        True,
        out_pad,
        groups,
        [True, True, True],
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize(
    ("shape", "groups", "affine"), [((2, 6, 4, 3), 3, True), ((3, 4, 5), 2, False)]
)
def test_group_norm_backward(shape: tuple[int, ...], groups: int, affine: bool) -> None:
    x = torch.randn(*shape)
    n, c = shape[0], shape[1]
    hw = x[0, 0].numel()
    w = torch.rand(c) + 0.5 if affine else None
    b = torch.randn(c) if affine else None
    _, mean, rstd = A.native_group_norm.default(x, w, b, n, c, hw, groups, 1e-5)
    mask = [True, affine, affine]
    check_op(
        A.native_group_norm_backward.default,
        torch.randn_like(x),
        x,
        mean,
        rstd,
        w,
        n,
        c,
        hw,
        groups,
        mask,
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize(
    ("op", "out_size", "in_size", "extra"),
    [
        # (bi/tri)linear and bicubic: align_corners on/off, up and down, scale factors given
        (A.upsample_bilinear2d_backward.default, [8, 12], [2, 3, 4, 6], (False, None, None)),
        (A.upsample_bilinear2d_backward.default, [8, 12], [2, 3, 4, 6], (True, None, None)),
        (A.upsample_bilinear2d_backward.default, [5, 3], [1, 2, 7, 6], (False, None, None)),
        (A.upsample_bilinear2d_backward.default, [10, 9], [1, 2, 4, 3], (False, 2.5, 3.0)),
        (A.upsample_linear1d_backward.default, [11], [2, 3, 4], (False, None)),
        (A.upsample_linear1d_backward.default, [11], [2, 3, 4], (True, None)),
        (A.upsample_trilinear3d_backward.default, [4, 6, 5], [1, 2, 2, 3, 4], (False,)),
        (A.upsample_bicubic2d_backward.default, [7, 9], [1, 2, 3, 4], (False, None, None)),
        (A.upsample_bicubic2d_backward.default, [7, 9], [1, 2, 3, 4], (True, None, None)),
        # nearest and nearest-exact
        (A.upsample_nearest2d_backward.default, [8, 12], [2, 3, 4, 6], ()),
        (A.upsample_nearest2d_backward.default, [7, 5], [1, 2, 3, 4], ()),
        (A.upsample_nearest1d_backward.default, [9], [2, 3, 4], ()),
        (A._upsample_nearest_exact2d_backward.default, [7, 5], [1, 2, 3, 4], ()),
        (A.upsample_nearest3d_backward.default, [4, 6, 4], [1, 2, 2, 3, 2], ()),
    ],
)
def test_upsample_backward(
    op: object, out_size: list[int], in_size: list[int], extra: tuple[object, ...]
) -> None:
    grad = torch.randn(*in_size[:2], *out_size)
    check_op(op, grad, out_size, in_size, *extra, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("k", "m", "n", "offs"),
    [
        (8, 12, 4, [4, 4, 12]),  # an empty group
        (4, 16, 8, [16]),  # one group
        (8, 10, 4, [3, 6, 8, 10]),
    ],
)
def test_grouped_mm_weight_grad(k: int, m: int, n: int, offs: list[int]) -> None:
    """The MoE experts' weight gradient: ``_grouped_mm(a.T (K, M), g (M, N), offs)``."""
    a = torch.randn(m, k).t()  # column-major, as autograd passes the transposed input
    check_op(
        A._grouped_mm.default,
        a,
        torch.randn(m, n),
        torch.tensor(offs, dtype=torch.int32),
        rtol=1e-5,
        atol=1e-5,
    )


def _g(reduction: int, *shape: int) -> object:
    return torch.tensor(0.7) if reduction else torch.randn(*shape)


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize(
    ("op", "extra"),
    [
        (A.huber_loss_backward.default, (1.0,)),
        (A.huber_loss_backward.default, (0.3,)),
        (A.smooth_l1_loss_backward.default, (1.0,)),
        (A.smooth_l1_loss_backward.default, (0.4,)),
        (A.soft_margin_loss_backward.default, ()),
    ],
)
def test_loss_backward(op: object, extra: tuple[object, ...], reduction: int) -> None:
    x, t = torch.randn(4, 6), torch.randn(4, 6)
    if op is A.soft_margin_loss_backward.default:
        t = torch.sign(t)
    check_op(op, _g(reduction, 4, 6), x, t, reduction, *extra)


@pytest.mark.parametrize(("reduction", "weighted"), [(0, False), (1, False), (1, True), (2, True)])
def test_binary_cross_entropy_backward(reduction: int, weighted: bool) -> None:
    x = torch.rand(4, 6) * 0.98 + 0.01
    t, w = torch.rand(4, 6), (torch.rand(6) + 0.5 if weighted else None)
    check_op(A.binary_cross_entropy_backward.default, _g(reduction, 4, 6), x, t, w, reduction)


@pytest.mark.parametrize(("shape", "dim"), [((4, 6), -1), ((4, 6), 0), ((2, 4, 3), 1)])
def test_glu_backward(shape: tuple[int, ...], dim: int) -> None:
    x = torch.randn(*shape)
    y = A.glu.default(x, dim)
    check_op(A.glu_backward.default, torch.randn_like(y), x, dim)


@pytest.mark.parametrize(
    ("x_shape", "out_size"),
    [((2, 3, 8, 6), (2, 3)), ((1, 2, 7, 5), (3, 2)), ((1, 2, 5, 4, 6), (2, 3, 4))],
)
def test_adaptive_max_pool_backward(x_shape: tuple[int, ...], out_size: tuple[int, ...]) -> None:
    x = torch.randn(*x_shape)
    nd = len(out_size)
    fwd = A.adaptive_max_pool2d if nd == 2 else A.adaptive_max_pool3d
    bwd = A.adaptive_max_pool2d_backward if nd == 2 else A.adaptive_max_pool3d_backward
    y, idx = fwd.default(x, list(out_size))
    check_op(bwd.default, torch.randn_like(y), x, idx)


@pytest.mark.parametrize(("shape", "w_shape"), [((4, 3, 5), (1, 3, 1)), ((4, 6), (1,))])
def test_prelu_backward(shape: tuple[int, ...], w_shape: tuple[int, ...]) -> None:
    x, w = torch.randn(*shape), torch.rand(*w_shape)
    check_op(A._prelu_kernel_backward.default, torch.randn(*shape), x, w)


@pytest.mark.parametrize(
    ("sizes", "offset", "dim1", "dim2"),
    [
        ([4, 5], 0, 0, 1),
        ([4, 5], 2, 0, 1),
        ([4, 5], -1, 0, 1),
        ([3, 4, 5], 1, 2, 0),
        ([2, 3, 3, 2], 0, 1, 2),
    ],
)
def test_diagonal_backward(sizes: list[int], offset: int, dim1: int, dim2: int) -> None:
    y = torch.diagonal(torch.zeros(*sizes), offset, dim1, dim2)
    check_op(A.diagonal_backward.default, torch.randn_like(y), sizes, offset, dim1, dim2)


@pytest.mark.parametrize(
    ("sizes", "dim", "size", "step"),
    [
        ([10], 0, 3, 2),
        ([4, 9], 1, 3, 3),
        ([4, 9], 1, 4, 1),
        ([7, 3], 0, 2, 3),
        ([2, 8, 3], -2, 5, 2),
    ],
)
def test_unfold_backward(sizes: list[int], dim: int, size: int, step: int) -> None:
    y = torch.zeros(*sizes).unfold(dim, size, step)
    check_op(A.unfold_backward.default, torch.randn_like(y), sizes, dim, size, step)


@pytest.mark.parametrize(
    ("fwd", "bwd", "shape", "pad"),
    [
        (A.reflection_pad1d, A.reflection_pad1d_backward, (2, 3, 6), [2, 3]),
        (A.reflection_pad2d, A.reflection_pad2d_backward, (1, 2, 5, 6), [1, 2, 3, 0]),
        (A.reflection_pad3d, A.reflection_pad3d_backward, (1, 2, 3, 4, 5), [1, 1, 2, 0, 1, 2]),
        (A.replication_pad1d, A.replication_pad1d_backward, (2, 3, 4), [3, 1]),
        (A.replication_pad2d, A.replication_pad2d_backward, (1, 2, 5, 6), [2, 2, 0, 3]),
        (A.replication_pad3d, A.replication_pad3d_backward, (1, 2, 3, 4, 2), [1, 2, 1, 1, 0, 2]),
    ],
)
def test_border_pad_backward(
    fwd: object, bwd: object, shape: tuple[int, ...], pad: list[int]
) -> None:
    x = torch.randn(*shape)
    y = fwd.default(x, pad)  # type: ignore[attr-defined]
    check_op(bwd.default, torch.randn_like(y), x, pad)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("s1", "s2", "p"),
    [((4, 3), (5, 3), 2.0), ((2, 4, 3), (2, 5, 3), 2.0), ((2, 4, 3), (2, 6, 3), 1.0)],
)
def test_cdist_backward(s1: tuple[int, ...], s2: tuple[int, ...], p: float) -> None:
    x1, x2 = torch.randn(*s1), torch.randn(*s2)
    x2[..., 0, :] = x1[..., 0, :]  # a zero distance: its term is 0
    d = A._cdist_forward.default(x1, x2, p, None)
    check_op(A._cdist_backward.default, torch.randn_like(d), x1, x2, p, d)
