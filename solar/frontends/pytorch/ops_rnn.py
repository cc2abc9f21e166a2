"""Lowerings of whole-sequence recurrent ATen ops (LSTM, GRU, Elman RNN): one kernel each.

Contract: ``(LowerCtx, OpCall) -> None``; each call emits one kernel. Every layer and
direction is a ``seq for t`` recurrence: per step, the gate pre-activations
``b_ih + b_hh + X[t] W_ih^T + h W_hh^T`` go into a kernel-local, then the cell update
(torch's gate order: LSTM ``i, f, g, o``; GRU ``r, z, n`` with ``n = tanh(W_in x + b_in
+ r * (W_hn h + b_hn))``) rewrites the local state ``h`` (and ``c``) and the layer's
output row. Intermediate layers' outputs are kernel-locals; reverse directions run
``t' = T - 1 - t``; bidirectional layers write the two halves of the feature dim.

The capture records ``nn.LSTM``/``nn.GRU``/``nn.RNN`` over a padded batch as one
``lstm``/``gru``/``rnn_tanh``/``rnn_relu`` (``.input``) call (Note [Composite RNN
capture] in composite.py). Below that, CPU dispatch (torch 2.13) would reach one
``mkldnn_rnn_layer`` per layer and direction for ``nn.LSTM`` (time-major input, gates
``[4H, I]``, ``reverse`` flag; the bias operands are dummies when ``has_biases`` is
false) and decompose the others per time step into ``addmm``/``sigmoid``/``stack``...;
``nn.LSTM(proj_size=...)`` and the ``*Cell`` modules still are. ``mkldnn_rnn_layer`` and
the cuDNN ``_cudnn_rnn`` are registered too, for captures that see them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from solar.frontends.kit import (
    Nest,
    Sink,
    TensorInfo,
    TensorRef,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    iadd,
    imul,
    nest,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Binary, Call, DType, Expr, For, Reduce, Stmt, lit

__all__ = ["RnnWeights", "emit_rnn"]

Mode = Literal["lstm", "gru", "rnn_tanh", "rnn_relu"]
_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


@dataclass(frozen=True, slots=True)
class RnnWeights:
    """One layer-direction's weights: ``w_ih [G*H, I]``, ``w_hh [G*H, H]``, biases ``[G*H]``."""

    w_ih: TensorInfo
    w_hh: TensorInfo
    b_ih: TensorInfo | None
    b_hh: TensorInfo | None


StateIndex = Callable[[int, Expr, Expr], list[Expr]]
"""``(layer * dirs + dir, b, j)`` -> subscripts of the initial/final state tensors."""


def _mul(a: Expr, b: Expr) -> Expr:
    return Binary("*", a, b)


def _add(a: Expr, b: Expr) -> Expr:
    return Binary("+", a, b)


def _sig(a: Expr) -> Expr:
    return Call("sigmoid", (a,))


def _tanh(a: Expr) -> Expr:
    return Call("tanh", (a,))


class _Rnn:
    """Builds the recurrence of one layer-direction into a kernel."""

    def __init__(
        self, ctx: LowerCtx, kb: Sink, mode: Mode, acc: DType, batch: int, hidden: int
    ) -> None:
        self.ctx, self.kb, self.mode, self.acc = ctx, kb, mode, acc
        self.batch, self.hidden = batch, hidden

    def val(self, t: TensorInfo, idx: Sequence[Expr | int]) -> Expr:
        return cast(self.ctx.read(t, idx), t.dtype, self.acc)

    def step(
        self,
        w: RnnWeights,
        x_at: Callable[[Expr, Expr, Expr], Expr],
        n_in: int,
        h: TensorRef,
        c: TensorRef | None,
        t: Expr,
        write_out: Callable[[Expr, Expr, Expr], list[Stmt]],
    ) -> list[Stmt]:
        """One time step: gate pre-activations, then the state update and output row."""
        kb, hid, n_g = self.kb, self.hidden, _GATES[self.mode]
        (b, b2), (g,), (k, k2), (j,) = (
            kb.fresh_vars(n, h) for n, h in ((2, "b"), (1, "g"), (2, "k"), (1, "j"))
        )
        xin = _mul(x_at(t, b, k), self.val(w.w_ih, [g, k]))
        hin = _mul(h[b, k2], self.val(w.w_hh, [g, k2]))
        split = self.mode == "gru"  # n needs the hidden part separately
        gi = kb.local(self.acc, [self.batch, n_g * hid], "gates")
        gh = kb.local(self.acc, [self.batch, n_g * hid], "gates_h") if split else gi
        bias_i = self.val(w.b_ih, [g]) if w.b_ih is not None else None
        bias_h = self.val(w.b_hh, [g]) if w.b_hh is not None else None
        stmts: list[Stmt] = []
        if split:
            pre: list[Stmt] = [
                Assign(gi[b, g], bias_i if bias_i is not None else lit(0.0)),
                *nest([(k, n_in)], [Reduce(gi[b, g], "+", xin)]),
                Assign(gh[b, g], bias_h if bias_h is not None else lit(0.0)),
                *nest([(k2, hid)], [Reduce(gh[b, g], "+", hin)]),
            ]
        else:
            present = [e for e in (bias_i, bias_h) if e is not None]
            init: Expr = lit(0.0) if not present else present[0]
            if len(present) == 2:
                init = _add(present[0], present[1])
            pre = [
                Assign(gi[b, g], init),
                *nest([(k, n_in)], [Reduce(gi[b, g], "+", xin)]),
                *nest([(k2, hid)], [Reduce(gi[b, g], "+", hin)]),
            ]
        stmts += nest([(b, self.batch), (g, n_g * hid)], pre)

        def gate(q: int, tab: TensorRef = gi) -> Expr:
            return tab[b2, iadd(imul(q, hid), j)]

        hv = h[b2, j]
        if self.mode == "lstm":
            assert c is not None
            upd: list[Stmt] = [
                Assign(
                    c[b2, j],
                    _add(_mul(_sig(gate(1)), c[b2, j]), _mul(_sig(gate(0)), _tanh(gate(2)))),
                ),
                Assign(hv, _mul(_sig(gate(3)), _tanh(c[b2, j]))),
            ]
        elif self.mode == "gru":
            z = kb.local(self.acc, [self.batch, hid], "z")
            n = kb.local(self.acc, [self.batch, hid], "n")
            r = _sig(_add(gate(0), gate(0, gh)))
            upd = [
                Assign(z[b2, j], _sig(_add(gate(1), gate(1, gh)))),
                Assign(n[b2, j], _tanh(_add(gate(2), _mul(r, gate(2, gh))))),
                # (1 - z) * n + z * h, as n + z * (h - n)
                Assign(hv, _add(n[b2, j], _mul(z[b2, j], Binary("-", hv, n[b2, j])))),
            ]
        else:
            pre_act = gate(0)
            act = _tanh(pre_act) if self.mode == "rnn_tanh" else Call("max", (pre_act, lit(0.0)))
            upd = [Assign(hv, act)]
        stmts += nest([(b2, self.batch), (j, hid)], [*upd, *write_out(t, b2, j)])
        return stmts


def emit_rnn(
    ctx: LowerCtx,
    mode: Mode,
    x: TensorInfo,
    weights: Sequence[Sequence[RnnWeights]],
    *,
    out: TensorInfo | None,
    batch_first: bool,
    h0: tuple[TensorInfo, StateIndex] | None,
    c0: tuple[TensorInfo, StateIndex] | None,
    hy: tuple[TensorInfo, StateIndex] | None,
    cy: tuple[TensorInfo, StateIndex] | None,
    reverse: bool = False,
) -> None:
    """Emit a multi-layer (bi)directional recurrence as one kernel.

    Args:
        ctx: lowering context.
        mode: cell kind.
        x: input ``[T, B, I]`` (``[B, T, I]`` with ``batch_first``).
        weights: per layer, per direction.
        out: the last layer's output ``[T, B, dirs * H]`` (batch-first likewise).
        batch_first: layout of ``x`` and ``out``.
        h0: initial hidden state and its subscript map (zeros when ``None``).
        c0: initial cell state (LSTM).
        hy: final hidden state output.
        cy: final cell state output (LSTM).
        reverse: run a single-direction layer backwards in time.

    Raises:
        UnsupportedOpError: weight shapes that do not fit the mode.
    """
    n_t, n_b = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    hid = weights[0][0].w_hh.shape[1]
    dirs = len(weights[0])
    for layer in weights:
        for w in layer:
            if w.w_ih.shape[0] != _GATES[mode] * hid or w.w_hh.shape != (_GATES[mode] * hid, hid):
                raise UnsupportedOpError(f"{mode}: weight shapes do not match hidden size {hid}")
    kb = ctx.kernel(mode.split("_")[0])
    acc = accumulate_dtype(x.dtype)
    run = _Sequence(
        _Rnn(ctx, kb, mode, acc, n_b, hid), x, out, batch_first, n_t, dirs, (h0, c0, hy, cy)
    )
    prev: TensorRef | None = None
    for li, layer in enumerate(weights):
        last = li == len(weights) - 1
        buf = (
            None
            if last and out is not None
            else kb.local(acc, [n_t, n_b, dirs * hid], f"layer{li}")
        )
        for di, w in enumerate(layer):
            run.direction(li, di, w, buf, prev, back=reverse or di == 1)
        prev = buf


_State = tuple[TensorInfo, StateIndex] | None


@dataclass(frozen=True, slots=True)
class _Sequence:
    """The whole recurrence of one call: its input and output, time and layer extents,
    and the states ``(h0, c0, hy, cy)``; `direction` emits one layer-direction."""

    rnn: _Rnn
    x: TensorInfo
    out: TensorInfo | None
    batch_first: bool
    n_t: int
    dirs: int
    states: tuple[_State, _State, _State, _State]

    def tb(self, t: Expr, b: Expr) -> list[Expr]:
        return [b, t] if self.batch_first else [t, b]

    def direction(
        self,
        li: int,
        di: int,
        w: RnnWeights,
        buf: TensorRef | None,
        prev: TensorRef | None,
        *,
        back: bool,
    ) -> None:
        """Layer ``li``, direction ``di``: the initial state, the ``seq for t`` steps
        (into ``buf``, or the output for the last layer), the final state."""
        rnn, hid = self.rnn, self.rnn.hidden
        ld = li * self.dirs + di
        h, c = self._initial(ld)
        (s,) = rnn.kb.fresh_vars(1, "t")
        t_idx: Expr = Binary("-", lit(self.n_t - 1), s) if back else s

        def x_at(t: Expr, b: Expr, k: Expr) -> Expr:
            if li == 0:
                return rnn.val(self.x, [*self.tb(t, b), k])
            assert prev is not None
            return prev[t, b, k]

        def write_out(t: Expr, b: Expr, j: Expr) -> list[Stmt]:
            feat = iadd(imul(di, hid), j)
            if buf is not None:
                return [Assign(buf[t, b, feat], h[b, j])]
            assert self.out is not None
            return [Assign(rnn.ctx.write(self.out, [*self.tb(t, b), feat]), h[b, j])]

        n_in = self.x.shape[2] if li == 0 else self.dirs * hid
        body = rnn.step(w, x_at, n_in, h, c, t_idx, write_out)
        rnn.kb.emit(For(s.name, lit(0), lit(self.n_t), tuple(body), seq=True))
        self._final(ld, h, c)

    def _initial(self, ld: int) -> tuple[TensorRef, TensorRef | None]:
        """The state locals ``h`` (and ``c``), set from ``h0``/``c0`` or zeros."""
        rnn, kb = self.rnn, self.rnn.kb
        h0, c0 = self.states[0], self.states[1]
        h = kb.local(rnn.acc, [rnn.batch, rnn.hidden], "h")
        c = kb.local(rnn.acc, [rnn.batch, rnn.hidden], "c") if rnn.mode == "lstm" else None
        init = Nest(kb, [rnn.batch, rnn.hidden], ["b", "j"])
        bj = init.idx
        stmts: list[Stmt] = [
            Assign(h[tuple(bj)], rnn.val(h0[0], h0[1](ld, *bj)) if h0 else lit(0.0))
        ]
        if c is not None:
            stmts.append(Assign(c[tuple(bj)], rnn.val(c0[0], c0[1](ld, *bj)) if c0 else lit(0.0)))
        kb.emit(*init.wrap(stmts))
        return h, c

    def _final(self, ld: int, h: TensorRef, c: TensorRef | None) -> None:
        """``hy``/``cy`` from the state locals."""
        rnn = self.rnn
        hy, cy = self.states[2], self.states[3]
        fin = Nest(rnn.kb, [rnn.batch, rnn.hidden], ["b", "j"])
        outs: list[Stmt] = []
        if hy is not None:
            outs.append(Assign(rnn.ctx.write(hy[0], hy[1](ld, *fin.idx)), h[tuple(fin.idx)]))
        if cy is not None and c is not None:
            outs.append(Assign(rnn.ctx.write(cy[0], cy[1](ld, *fin.idx)), c[tuple(fin.idx)]))
        if outs:
            rnn.kb.emit(*fin.wrap(outs))


def _t(x: object) -> TensorInfo:
    if not isinstance(x, TensorInfo):
        raise UnsupportedOpError("tensor argument expected")
    return x


def _opt(x: object) -> TensorInfo | None:
    return x if isinstance(x, TensorInfo) else None


def _state2d(t: TensorInfo | None) -> tuple[TensorInfo, StateIndex] | None:
    return (t, lambda _ld, b, j: [b, j]) if t is not None else None


def _state3d(t: TensorInfo | None) -> tuple[TensorInfo, StateIndex] | None:
    return (t, lambda ld, b, j: [lit(ld), b, j]) if t is not None else None


@LOWERINGS.register("aten.mkldnn_rnn_layer.default")
def _mkldnn_rnn_layer(ctx: LowerCtx, call: OpCall) -> None:
    """``mkldnn_rnn_layer(input, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, batch_sizes, mode,
    hidden_size, num_layers, has_biases, bidirectional, batch_first, train)``: one LSTM layer.
    """
    a = call.arg
    x, w_ih, w_hh = _t(a(0, "input")), _t(a(1, "weight0")), _t(a(2, "weight1"))
    has_bias = bool(a(12, "has_biases"))
    b_ih, b_hh = (_opt(a(3, "weight2")), _opt(a(4, "weight3"))) if has_bias else (None, None)
    if a(8, "batch_sizes"):
        raise UnsupportedOpError("packed sequences (batch_sizes) are not lowered")
    outs = list(call.outputs) + [None] * 3
    # the input is time-major whatever batch_first says (the caller transposed it)
    emit_rnn(
        ctx,
        "lstm",
        x,
        [[RnnWeights(w_ih, w_hh, b_ih, b_hh)]],
        out=outs[0],
        batch_first=False,
        h0=_state2d(_opt(a(5, "hx_"))),
        c0=_state2d(_opt(a(6, "cx_"))),
        hy=_state2d(outs[1]),
        cy=_state2d(outs[2]),
        reverse=bool(a(7, "reverse")),
    )


def _layers(
    params: Sequence[TensorInfo],
    num_layers: int,
    dirs: int,
    has_bias: bool,
    stride: int | None = None,
) -> list[list[RnnWeights]]:
    per = stride if stride is not None else (4 if has_bias else 2)
    if len(params) != num_layers * dirs * per or (has_bias and per < 4):
        raise UnsupportedOpError("rnn: unexpected parameter list (projections are not lowered)")
    out: list[list[RnnWeights]] = []
    for li in range(num_layers):
        row = []
        for di in range(dirs):
            p = params[(li * dirs + di) * per : (li * dirs + di + 1) * per]
            row.append(
                RnnWeights(p[0], p[1], p[2] if has_bias else None, p[3] if has_bias else None)
            )
        out.append(row)
    return out


def _composite(mode: Mode) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        """``lstm(input, hx[], params[], has_biases, num_layers, dropout, train, bidirectional,
        batch_first)``; ``gru``/``rnn_*`` take one ``hx`` tensor."""
        a = call.arg
        x = _t(a(0, "input"))
        if x.rank != 3:
            raise UnsupportedOpError(f"{mode}: only batched (3-D) input is lowered")
        if float(a(5, "dropout", 0.0)) > 0.0 and bool(a(6, "train")):
            raise UnsupportedOpError(f"{mode}: dropout between layers is random")
        dirs = 2 if a(7, "bidirectional") else 1
        hx = a(1, "hx")
        h0, c0 = (hx[0], hx[1]) if mode == "lstm" else (hx, None)
        weights = _layers(
            list(a(2, "params")), int(a(4, "num_layers")), dirs, bool(a(3, "has_biases"))
        )
        outs = list(call.outputs) + [None] * 3
        emit_rnn(
            ctx,
            mode,
            x,
            weights,
            out=outs[0],
            batch_first=bool(a(8, "batch_first")),
            h0=_state3d(_opt(h0)),
            c0=_state3d(_opt(c0)),
            hy=_state3d(outs[1]),
            cy=_state3d(outs[2]) if mode == "lstm" else None,
        )

    return lower


LOWERINGS.register("aten.lstm.input")(_composite("lstm"))
LOWERINGS.register("aten.gru.input")(_composite("gru"))
LOWERINGS.register("aten.rnn_tanh.input")(_composite("rnn_tanh"))
LOWERINGS.register("aten.rnn_relu.input")(_composite("rnn_relu"))


_CUDNN_MODES: dict[int, Mode] = {0: "rnn_relu", 1: "rnn_tanh", 2: "lstm", 3: "gru"}


def _vendor_rnn(ctx: LowerCtx, call: OpCall, pos: dict[str, int]) -> None:
    """Shared by ``_cudnn_rnn`` and ``miopen_rnn`` (same modes, argument positions differ)."""
    a = call.arg
    mode = _CUDNN_MODES.get(int(a(pos["mode"], "mode")))
    proj = int(a(pos["proj_size"], "proj_size", 0) or 0) if "proj_size" in pos else 0
    if mode is None or proj > 0 or a(pos["batch_sizes"], "batch_sizes"):
        raise UnsupportedOpError(f"{call.op}: projections, packed sequences or unknown mode")
    if float(a(pos["dropout"], "dropout", 0.0)) > 0.0 and bool(a(pos["dropout"] + 1, "train")):
        raise UnsupportedOpError(f"{call.op}: dropout between layers is random")
    dirs = 2 if a(pos["bidirectional"], "bidirectional") else 1
    stride = int(a(2, "weight_stride0"))
    weights = _layers(
        list(a(1, "weight")), int(a(pos["num_layers"], "num_layers")), dirs, stride >= 4, stride
    )
    outs = [*call.outputs, None, None, None]
    emit_rnn(
        ctx,
        mode,
        _t(a(0, "input")),
        weights,
        out=outs[0],
        batch_first=bool(a(pos["batch_first"], "batch_first")),
        h0=_state3d(_opt(a(pos["hx"], "hx"))),
        c0=_state3d(_opt(a(pos["hx"] + 1, "cx"))),
        hy=_state3d(outs[1]),
        cy=_state3d(outs[2]) if mode == "lstm" else None,
    )


@LOWERINGS.register("aten._cudnn_rnn.default")
def _cudnn_rnn(ctx: LowerCtx, call: OpCall) -> None:
    """``_cudnn_rnn(input, weight[], weight_stride0, weight_buf, hx, cx, mode, hidden_size,
    proj_size, num_layers, batch_first, dropout, train, bidirectional, batch_sizes, ...)``.
    """
    _vendor_rnn(
        ctx,
        call,
        {
            "hx": 4,
            "mode": 6,
            "proj_size": 8,
            "num_layers": 9,
            "batch_first": 10,
            "dropout": 11,
            "bidirectional": 13,
            "batch_sizes": 14,
        },
    )


@LOWERINGS.register("aten.miopen_rnn.default")
def _miopen_rnn(ctx: LowerCtx, call: OpCall) -> None:
    """``miopen_rnn(input, weight[], weight_stride0, hx, cx, mode, hidden_size, num_layers,
    batch_first, dropout, train, bidirectional, batch_sizes, dropout_state)``.
    """
    _vendor_rnn(
        ctx,
        call,
        {
            "hx": 3,
            "mode": 5,
            "num_layers": 7,
            "batch_first": 8,
            "dropout": 9,
            "bidirectional": 11,
            "batch_sizes": 12,
        },
    )
