"""Recurrent lowerings (ops_rnn.py) against torch: mkldnn LSTM layers and whole-sequence ops."""

from __future__ import annotations

import pytest
from nn_opcheck import check_op

torch = pytest.importorskip("torch")
nn = pytest.importorskip("torch.nn")
pytestmark = pytest.mark.torch

A = torch.ops.aten


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_mkldnn_rnn_layer(reverse: bool, bias: bool) -> None:
    x = torch.randn(5, 3, 4)
    w_ih, w_hh = torch.randn(24, 4) * 0.5, torch.randn(24, 6) * 0.5
    b_ih, b_hh = (torch.randn(24), torch.randn(24)) if bias else (w_ih, w_hh)  # dummies
    h0, c0 = torch.randn(3, 6), torch.randn(3, 6)
    check_op(
        A.mkldnn_rnn_layer.default,
        x,
        w_ih,
        w_hh,
        b_ih,
        b_hh,
        h0,
        c0,
        reverse,
        [],
        2,
        6,
        1,
        bias,
        False,
        False,
        False,
        skip_outputs=(3,),
    )


@pytest.mark.parametrize(
    ("mode", "module"),
    [
        ("lstm", lambda: nn.LSTM(4, 5, 2, bidirectional=True)),
        ("gru", lambda: nn.GRU(4, 5, 2, bidirectional=True)),
        ("rnn_tanh", lambda: nn.RNN(4, 5, 1)),
        ("rnn_relu", lambda: nn.RNN(4, 5, 2, nonlinearity="relu", bias=False)),
    ],
)
@pytest.mark.parametrize("batch_first", [False, True])
def test_whole_sequence_ops(mode: str, module: object, batch_first: bool) -> None:
    torch.manual_seed(0)
    mod = module()  # type: ignore[operator]
    params = [p.detach() for p in mod._flat_weights]
    states = mod.num_layers * (2 if mod.bidirectional else 1)
    x = torch.randn(3, 4, 4)
    h0 = torch.randn(states, 3 if batch_first else 4, 5)
    hx = [h0, torch.randn_like(h0)] if mode == "lstm" else h0
    check_op(
        getattr(A, mode).input,
        x,
        hx,
        params,
        mod.bias,
        mod.num_layers,
        0.0,
        False,
        mod.bidirectional,
        batch_first,
    )


@pytest.mark.parametrize(("mode", "code"), [("lstm", 2), ("gru", 3)])
def test_cudnn_rnn_matches_the_module(mode: str, code: int) -> None:
    # CUDA-only op: compare with the module's CPU result on the same weights
    torch.manual_seed(0)
    mod = (nn.LSTM if mode == "lstm" else nn.GRU)(4, 5, 2, bidirectional=True, batch_first=True)
    params = [p.detach() for p in mod._flat_weights]
    x, h0 = torch.randn(3, 4, 4), torch.randn(4, 3, 5)
    c0 = torch.randn(4, 3, 5) if mode == "lstm" else None
    with torch.no_grad():
        y, state = mod(x, (h0, c0) if mode == "lstm" else h0)
    hy, cy = state if mode == "lstm" else (state, None)
    check_op(
        A._cudnn_rnn.default,
        x,
        params,
        4,
        None,
        h0,
        c0,
        code,
        5,
        0,
        2,
        True,
        0.0,
        False,
        True,
        [],
        None,
        expected=(y, hy, cy, None, None),
    )
