"""The independent FLOP check's padding accounting (solar/frontends/pytorch/flops.py):
taps over zero padding of a convolution, and taps of a transposed convolution that
write the outputs its ``padding`` crops, counted from the shapes and checked against a
brute-force enumeration and against SOLAR's own count (no false shortfall)."""

from __future__ import annotations

import pytest

import solar
from solar.frontends.pytorch.flops import padding_flops

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# (input size, kernel, stride, padding, dilation, output_padding)
TRANSPOSED = [
    (4, 3, 2, 1, 1, 1),
    (5, 4, 2, 1, 1, 0),
    (6, 3, 1, 0, 1, 0),
    (3, 3, 3, 2, 2, 2),
    (7, 2, 2, 0, 1, 0),
]


def _brute_kept(n: int, k: int, s: int, p: int, d: int, op: int) -> int:
    out = (n - 1) * s - 2 * p + d * (k - 1) + op + 1
    return sum(1 for i in range(n) for t in range(k) if 0 <= i * s - p + t * d < out)


@pytest.mark.parametrize("case", TRANSPOSED)
def test_transposed_cropped_taps_match_enumeration(case: tuple[int, ...]) -> None:
    n, k, s, p, d, op = case
    cin, cout, batch = 3, 2, 2
    total = 2 * batch * cin * cout * (n * k) ** 2  # FlopCounterMode: every input x tap
    args = ((batch, cin, n, n), (cin, cout, k, k), None, (s, s), (p, p), (d, d), True, (op, op))
    kept = 2 * batch * cin * cout * _brute_kept(n, k, s, p, d, op) ** 2
    assert padding_flops("convolution", args, total) == total - kept


@pytest.mark.parametrize("case", TRANSPOSED)
def test_transposed_convolution_is_no_false_shortfall(case: tuple[int, ...]) -> None:
    n, k, s, p, d, op = case
    model = torch.nn.ConvTranspose2d(3, 2, k, stride=s, padding=p, dilation=d,
                                     output_padding=op, bias=False)
    report = solar.analyze(model, (torch.randn(2, 3, n, n),), validate="off")
    check = report.coverage.independent_flops
    assert check is not None
    assert not check.shortfall, check
    assert check.solar_flops >= check.covered_flops - check.padding_flops


# Note [Counter gaps]: CPU flash attention, counted with the CUDA flash op's formula
ATTENTION = [((2, 4, 16, 8), (2, 4, 16, 8)), ((1, 4, 12, 16), (1, 2, 20, 16))]


@pytest.mark.parametrize(("q_shape", "kv_shape"), ATTENTION)
def test_cpu_flash_attention_formula_agrees_with_the_registry(
    q_shape: tuple[int, ...], kv_shape: tuple[int, ...]
) -> None:
    from torch.utils.flop_counter import flop_registry

    from solar.frontends.pytorch.flops import EXTRA_FORMULAS

    aten = torch.ops.aten
    q, k, v = torch.randn(*q_shape), torch.randn(*kv_shape), torch.randn(*kv_shape)
    theirs = flop_registry[aten._scaled_dot_product_flash_attention](q, k, v, out_val=None)
    ours = EXTRA_FORMULAS["_scaled_dot_product_flash_attention_for_cpu"](q, k, v, out_val=None)
    assert ours == theirs
    causal = EXTRA_FORMULAS["_scaled_dot_product_flash_attention_for_cpu"](
        q, k, v, 0.0, True, out_val=None
    )
    s_q, s_k = q_shape[2], kv_shape[2]
    assert causal * s_q * s_k == theirs * sum(min(i + 1, s_k) for i in range(s_q))


@pytest.mark.parametrize("causal", [False, True])
def test_the_independent_count_sees_cpu_attention(causal: bool) -> None:
    def attend(q: object, k: object, v: object) -> object:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    q, k, v = (torch.randn(2, 4, 32, 16) for _ in range(3))
    report = solar.analyze(attend, (q, k, v), validate="off")
    check = report.coverage.independent_flops
    assert check is not None
    full = 2 * 2 * 4 * 32 * 32 * (16 + 16)
    assert check.covered_flops == (full * (32 * 33 // 2) // (32 * 32) if causal else full)
    assert not check.shortfall, check


# Note [Grouped convolution backward]: (in channels, out channels, groups, padding, transposed)
GROUPED = [
    (8, 8, 8, 1, False),  # depthwise (MobileNet, EfficientNet)
    (8, 16, 4, 0, False),
    (6, 6, 1, 1, False),  # ungrouped: torch's own count
    (8, 4, 2, 1, True),
]


def _backward_calls(case: tuple[int, int, int, int, bool]) -> tuple[object, ...]:
    c_in, c_out, groups, pad, transposed = case
    conv = torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d
    layer = conv(c_in, c_out, 3, padding=pad, groups=groups, bias=False)
    x = torch.randn(2, c_in, 7, 7, requires_grad=True)
    out = layer(x)
    gx, gw = torch.autograd.grad(out.sum(), (x, layer.weight))
    return out, x, layer.weight, gx, gw, groups, pad, transposed


@pytest.mark.parametrize("case", GROUPED)
def test_grouped_convolution_backward_counts_the_forward_products_twice(
    case: tuple[int, int, int, int, bool],
) -> None:
    # grad_input and grad_weight each pair every output with every tap of its group's
    # channels, as the forward does: each costs exactly the forward's FLOPs
    from torch.utils.flop_counter import conv_flop_count, flop_registry

    from solar.frontends.pytorch.flops import CORRECTED_FORMULAS

    out, x, w, gx, gw, groups, pad, transposed = _backward_calls(case)
    args = (torch.ones_like(out), x, w, None, [1, 1], [pad, pad], [1, 1], transposed, [0, 0],
            groups, [True, True, False])
    forward = conv_flop_count(list(x.shape), list(w.shape), list(out.shape), transposed)
    ours = CORRECTED_FORMULAS["convolution_backward"](*args, out_val=(gx, gw, None))
    assert ours == 2 * forward
    theirs = flop_registry[torch.ops.aten.convolution_backward](*args, out_val=(gx, gw, None))
    assert theirs == ours + forward * (groups - 1)  # torch: grad_weight x groups


@pytest.mark.parametrize("groups", [1, 8])
def test_a_padded_grouped_convolution_step_is_no_false_shortfall(groups: int) -> None:
    model = torch.nn.Sequential(
        torch.nn.Conv2d(8, 8, 3, padding=1, groups=groups), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 4, 3, padding=2, dilation=2),
    )
    report = solar.analyze(model, (torch.randn(2, 8, 12, 12, requires_grad=True),),
                           validate="off", train=True)
    check = report.coverage.independent_flops
    assert check is not None
    assert not check.shortfall, check
    # both products of each backward skip the taps the forward skips
    forward, backward, _ = (p.flops for p in report.training.phases)
    assert check.padding_flops > 0
    assert check.solar_flops >= check.covered_flops - check.padding_flops
    assert backward > forward


# A convolution's backward: both gradients pair every output with every tap, as the
# forward does, so the same share of taps falls on the padding (the README tour's
# `solar analyze samples/torch/train_cnn.py --train` warned of a 2.1% FLOP shortfall).
BACKWARD = [(7, 3, 1, 1, 1), (8, 3, 2, 1, 1), (9, 5, 1, 2, 2), (6, 1, 1, 0, 1)]


@pytest.mark.parametrize("case", BACKWARD)
def test_backward_padding_is_the_forward_share(case: tuple[int, ...]) -> None:
    n, k, s, p, d = case
    forward = ((2, 3, n, n), (4, 3, k, k), None, (s, s), (p, p), (d, d), False)
    out = (n + 2 * p - d * (k - 1) - 1) // s + 1
    total = 2 * 2 * 4 * 3 * out * out * k * k
    backward = ((2, 4, out, out), (2, 3, n, n), (4, 3, k, k), [4], (s, s), (p, p), (d, d),
                False, (0, 0), 1, [True, True, False])  # fmt: skip
    assert padding_flops("convolution_backward", backward, 2 * total) == 2 * padding_flops(
        "convolution", forward, total
    )


def test_a_padded_convolution_trained_is_no_false_shortfall() -> None:
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding=1)
    )
    report = solar.analyze(model, (torch.randn(2, 3, 10, 10),), validate="off", train=True)
    check = report.coverage.independent_flops
    assert check is not None
    assert check.padding_flops > 0
    assert not check.shortfall, check
    assert check.solar_flops >= check.covered_flops - check.padding_flops
