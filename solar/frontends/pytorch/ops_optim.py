"""Lowerings of the fused optimizer ops (``fused=True``): one kernel per parameter.

Contract: ``aten._fused_adam``/``_fused_adamw``/``_fused_sgd`` (the functional forms of
the ``_fused_*_`` ops ``torch.optim`` calls with ``fused=True``) over lists of
parameters become one kernel per parameter that reads the parameter, its gradient and
its state once and writes the parameter and the state once, the intermediate values in
kernel locals (Note [Fused optimizer]).

Note [Fused optimizer]
~~~~~~~~~~~~~~~~~~~~~~~
``torch.optim.Adam(..., fused=True)`` runs CUDA's ``_fused_adam_``: a multi-tensor-apply
kernel whose every thread reads ``param, grad, exp_avg, exp_avg_sq`` and writes
``param, exp_avg, exp_avg_sq`` once (ATen's ``FusedAdamKernel``; the CPU kernel does the
same per element). The single-tensor form SOLAR models otherwise launches ``lerp``,
``mul``, ``addcmul``, ``sqrt``, ``div``, ``add``, ``addcdiv`` per parameter, each through
DRAM, so charging a fused step as that sequence is above its minimum. Each parameter's
update here is one kernel over its elements: the bytes are the one kernel's (the launch
count is not charged, so one kernel per parameter and one per chunk of the tensor list
cost the same). The bias corrections use the step count `ADAM_STEP` of the training
step (train_step.py), as the unfused update does; the 4-byte step tensor is not read.
``grads_out`` (a copy of the gradient in the functional form; the in-place op leaves the
gradient alone) is written and, read by nothing, removed as dead code. ``foreach=True``
is not fused: ``_foreach_lerp_``, ``_foreach_mul_``... launch one multi-tensor kernel per
op, the same ops and bytes as the single-tensor form.
"""

from __future__ import annotations

from collections.abc import Callable

from solar.frontends.kit import TensorInfo, UnsupportedOpError, nest
from solar.frontends.kit.dtypes import cast
from solar.frontends.pytorch.lowering_utils import binop, fn, scalar_lit
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.frontends.pytorch.train_step import ADAM_STEP
from solar.ir import Assign, DType, Expr, Name, Stmt

__all__: list[str] = []

def _lists(call: OpCall, count: int) -> list[tuple[TensorInfo, ...]]:
    lists = [tuple(call.args[k]) for k in range(count)]
    for xs in lists:
        if not all(isinstance(x, TensorInfo) for x in xs):
            raise UnsupportedOpError(f"{call.op}: a list entry is not a tensor")
    return lists


def _outputs(call: OpCall, n: int, lists: int) -> list[tuple[TensorInfo, ...]]:
    """Per parameter, its output of each of the first ``lists`` output lists."""
    outs = [o for o in call.outputs[: n * lists] if isinstance(o, TensorInfo)]
    if len(outs) < n * lists:
        raise UnsupportedOpError(f"{call.op}: an output is not a tensor")
    return [tuple(outs[j + k * n] for k in range(lists)) for j in range(n)]


def _check(call: OpCall) -> None:
    if call.kwargs.get("maximize") or call.kwargs.get("amsgrad"):
        raise UnsupportedOpError(f"{call.op}: maximize/amsgrad")
    if call.kwargs.get("grad_scale") is not None or call.kwargs.get("found_inf") is not None:
        raise UnsupportedOpError(f"{call.op}: grad_scale/found_inf")


class _Update:
    """One parameter's kernel: reads at ``idx``, kernel locals for the values."""

    def __init__(self, ctx: LowerCtx, hint: str, p: TensorInfo) -> None:
        self.kb = ctx.kernel(hint)
        self.idx = ctx.vars(self.kb, p.rank)
        self.shape = p.shape
        self.dt = DType.F32 if p.dtype in (DType.F16, DType.BF16) else p.dtype
        self.stmts: list[Stmt] = []

    def read(self, t: TensorInfo) -> Expr:
        return cast(LowerCtx.read(t, self.idx), t.dtype, self.dt)

    def let(self, value: Expr, hint: str) -> Expr:
        """``value`` in a kernel local (computed once, read by later statements)."""
        ref = self.kb.local(self.dt, self.shape, hint)
        at = ref[tuple(self.idx)]
        self.stmts.append(Assign(at, value))
        return at

    def store(self, t: TensorInfo, value: Expr) -> None:
        self.stmts.append(Assign(LowerCtx.write(t, self.idx), cast(value, self.dt, t.dtype)))

    def lit(self, x: float) -> Expr:
        return scalar_lit(x, self.dt)

    def finish(self) -> None:
        dims: list[tuple[Name, int]] = list(zip(self.idx, self.shape, strict=True))
        self.kb.emit(*nest(dims, self.stmts))


def _adam(decoupled: bool) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        """``(self[], grads[], exp_avgs[], exp_avg_sqs[], max_exp_avg_sqs[], state_steps[],
        *, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize)``."""
        _check(call)
        ps, gs, ms, vs = _lists(call, 4)
        lr, wd = float(call.kwargs["lr"]), float(call.kwargs["weight_decay"])
        b1, b2 = float(call.kwargs["beta1"]), float(call.kwargs["beta2"])
        eps = float(call.kwargs["eps"])
        step_size = lr / (1.0 - b1**ADAM_STEP)
        bc2_sqrt = (1.0 - b2**ADAM_STEP) ** 0.5
        for j, (p_out, g_out, m_out, v_out) in enumerate(_outputs(call, len(ps), 4)):
            u = _Update(ctx, call.op.lstrip("_"), ps[j])
            p, g, m, v = u.read(ps[j]), u.read(gs[j]), u.read(ms[j]), u.read(vs[j])
            if wd != 0.0 and decoupled:
                p = binop("*", p, u.lit(1.0 - lr * wd))
            elif wd != 0.0:
                g = u.let(binop("+", g, binop("*", p, u.lit(wd))), "grad")
            m2 = u.let(binop("+", m, binop("*", u.lit(1.0 - b1), binop("-", g, m))), "exp_avg")
            v2 = u.let(binop("+", binop("*", v, u.lit(b2)),
                             binop("*", u.lit(1.0 - b2), binop("*", g, g))), "exp_avg_sq")
            denom = binop("+", binop("/", fn("sqrt", v2), u.lit(bc2_sqrt)), u.lit(eps))
            u.store(m_out, m2)
            u.store(v_out, v2)
            u.store(p_out, binop("-", p, binop("/", binop("*", u.lit(step_size), m2), denom)))
            u.store(g_out, u.read(gs[j]))
            u.finish()

    return lower


LOWERINGS.register("aten._fused_adam")(_adam(decoupled=False))
LOWERINGS.register("aten._fused_adamw")(_adam(decoupled=True))


@LOWERINGS.register("aten._fused_sgd")
def _sgd(ctx: LowerCtx, call: OpCall) -> None:
    """``(self[], grads[], momentum_buffer_list[], *, weight_decay, momentum, lr,
    dampening, nesterov, maximize, is_first_step)``."""
    _check(call)
    ps, gs, bufs = _lists(call, 3)
    lr, wd = float(call.kwargs["lr"]), float(call.kwargs["weight_decay"])
    mom, damp = float(call.kwargs["momentum"]), float(call.kwargs["dampening"])
    first, nesterov = bool(call.kwargs["is_first_step"]), bool(call.kwargs["nesterov"])
    if (mom != 0.0) != bool(bufs):
        raise UnsupportedOpError("_fused_sgd: momentum without buffers (or buffers without it)")
    for j, outs in enumerate(_outputs(call, len(ps), 3 if bufs else 2)):
        u = _Update(ctx, "fused_sgd", ps[j])
        p, g = u.read(ps[j]), u.read(gs[j])
        if wd != 0.0:
            g = u.let(binop("+", g, binop("*", p, u.lit(wd))), "grad")
        if bufs:
            buf = g if first else binop("+", binop("*", u.read(bufs[j]), u.lit(mom)),
                                         binop("*", g, u.lit(1.0 - damp)))
            b2 = u.let(buf, "buf")
            u.store(outs[2], b2)
            g = binop("+", g, binop("*", b2, u.lit(mom))) if nesterov else b2
        u.store(outs[0], binop("-", p, binop("*", g, u.lit(lr))))
        u.store(outs[1], u.read(gs[j]))
        u.finish()
