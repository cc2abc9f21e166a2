"""Lowering of ``conv_general_dilated``: an adapter to the kit's `emit_conv`.

Contract: ``EqnCtx -> None``; one kernel named ``conv`` (`solar.frontends.kit.emit.conv`)
for any dimension numbers, feature/batch groups, strides, padding (negative included)
and lhs/rhs dilation: the gather form with a guard skipping padded taps (and ``%`` for
the holes of lhs dilation under a non-unit stride), or, with lhs dilation and unit
strides (a transposed conv, the input gradient of a strided conv), the affine scatter
form the PyTorch frontend emits for ``conv_transpose``.
"""

from __future__ import annotations

from typing import Any

from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit.emit import ConvSpec, Layout, emit_conv

__all__: list[str] = []


def _layouts(dn: Any) -> tuple[Layout | None, Layout | None, Layout | None]:
    """``(lhs, rhs, out)`` layouts of the dimension numbers (``None``: the default)."""
    if dn is None:
        return None, None, None
    return tuple(dn.lhs_spec), tuple(dn.rhs_spec), tuple(dn.out_spec)


@LOWERINGS.register("conv_general_dilated")
def _conv(ctx: EqnCtx) -> None:
    x, w = ctx.ins
    p = ctx.params
    nd = len(x.shape) - 2
    lhs, rhs, out = _layouts(p.get("dimension_numbers"))
    spec = ConvSpec(
        strides=tuple(int(v) for v in p["window_strides"]),
        padding=tuple(int(lo) for lo, _ in p["padding"]),
        lhs_dilation=tuple(int(v) for v in (p.get("lhs_dilation") or (1,) * nd)),
        rhs_dilation=tuple(int(v) for v in (p.get("rhs_dilation") or (1,) * nd)),
        feature_groups=int(p.get("feature_group_count", 1)),
        batch_groups=int(p.get("batch_group_count", 1)),
        lhs_layout=lhs,
        rhs_layout=rhs,
        out_layout=out,
    )
    emit_conv(ctx, x, w, ctx.out(0), spec, hint="conv")
