"""Lowerings of scans: cumsum, cumprod, logcumsumexp, cummax/cummin.

Contract: one kernel per call, `solar.frontends.kit.emit.scan`'s (a ``seq`` loop over
the scanned dim carrying a kernel-local running value per row); this module adapts
ATen's ``dim`` and the ``(values, indices)`` outputs of cummax/cummin. torch picks the
latest index on ties, as the emitter does. Reverse and exclusive scans as users
write them (``flip``/``cumsum``/``flip``, ``cumsum - x``, ``cat`` of a zero and a
slice) decompose into ops covered elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable

from solar.frontends.kit.emit.scan import emit_scan
from solar.frontends.pytorch.lowering_utils import norm_dim, out0, tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall

__all__: list[str] = []


def _scan(combine: str) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out = tensor_arg(call, 0, "self"), out0(call)
        indices = call.outputs[1] if combine in ("max", "min") and len(call.outputs) > 1 else None
        emit_scan(
            ctx.kernel(),
            x.shape,
            norm_dim(call.arg(1, "dim"), x.rank),
            x.at,
            x.dtype,
            out.at,
            out.dtype,
            combine,
            index_write=indices.at if indices is not None else None,
        )

    return lower


LOWERINGS.register("aten.cumsum")(_scan("sum"))
LOWERINGS.register("aten.cumprod")(_scan("prod"))
LOWERINGS.register("aten.logcumsumexp")(_scan("logsumexp"))
LOWERINGS.register("aten.cummax")(_scan("max"))
LOWERINGS.register("aten.cummin")(_scan("min"))
