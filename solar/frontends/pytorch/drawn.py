"""Ops whose values only the real run knows: random draws and selections.

Contract: `RANDOM_OPS` and `ORDER_OPS` name them; `emit_drawn` writes the kernel the
PyTorch driver lowers such a call to (Note [Random ops]).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontends.kit import KernelBuilder, TensorInfo, nest
from solar.frontends.pytorch.capture_types import RecordedCall, TensorMeta
from solar.ir import Assign

__all__ = ["ORDER_OPS", "RANDOM_OPS", "emit_drawn"]

RANDOM_OPS = frozenset({
    "rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm",
    "bernoulli", "bernoulli_", "normal", "normal_", "uniform_", "exponential_",
    "geometric_", "cauchy_", "log_normal_", "random_", "native_dropout", "multinomial",
    "poisson",
})  # fmt: skip
"""Ops that draw random values: lowered by `emit_drawn` (Note [Random ops])."""

ORDER_OPS = frozenset({
    "sort", "argsort", "topk", "kthvalue", "median", "nanmedian", "mode", "histc", "bincount",
    "nonzero", "unique", "_unique2", "unique_consecutive", "unique_dim", "searchsorted",
    "bucketize",
})  # fmt: skip
"""Selection and counting ops (MoE routing: ``topk``, ``sort``, ``histc``): lowered like
random ops, from the values the real run computed (Note [Random ops]); their writes
and the reads of their inputs are charged, their comparisons are not (a lower bound)."""

# Note [Random ops]
# ~~~~~~~~~~~~~~~~~
# A random op's values cannot be recomputed by the IR, so each output is a copy kernel
# from an extra input ``r<call>_<op>`` holding what the real (seeded) run drew: the
# reference replay keeps the call's outputs exactly as for an uncovered op, so the rest
# of the program validates against eager. The op counts as covered; for the bounds the
# copy becomes a fill (`solar.ir.fill_generated`): its writes are charged, no read.
# ``native_dropout`` (both outputs drawn) and training-mode ``dropout`` (which eager
# decomposes into ``bernoulli_``, ``div_``, ``mul``) follow the same path. So do the
# `ORDER_OPS` (sort, topk, histc...): an exact sort in affine IR needs a quadratic
# number of comparisons, which would overstate the work; instead the kernel also reads
# each tensor input once into a kernel-local (charged as the input's reads, no FLOPs),
# and validation checks everything downstream on the real selection.


DrawnInput = Callable[[RecordedCall, int, TensorMeta], TensorInfo]
"""Declares the extra program input that holds output ``pos`` of a call as the real
run computed it."""


def emit_drawn(
    kb: KernelBuilder,
    call: RecordedCall,
    inputs: Sequence[TensorInfo | None],
    outs: Sequence[TensorInfo | None],
    drawn_input: DrawnInput,
) -> list[str]:
    """Into ``kb``: each of ``inputs`` read once into a kernel-local (the reads an
    `ORDER_OPS` op makes), then each output copied from its `drawn_input` (Note [Random
    ops]); returns the kernel-locals' names."""
    seen_locals = []
    for x in inputs:
        if x is not None and x.rank > 0:
            seen = kb.local(x.dtype, x.shape, "seen")
            idx = kb.fresh_vars(x.rank)
            kb.emit(
                *nest(list(zip(idx, x.shape, strict=True)), [Assign(seen[tuple(idx)], x.at(idx))])
            )
            seen_locals.append(seen.name)
    for pos, (m, out) in enumerate(zip(call.outputs, outs, strict=True)):
        if m is None or out is None:
            continue
        src = drawn_input(call, pos, m)
        idx = kb.fresh_vars(out.rank)
        kb.emit(*nest(list(zip(idx, out.shape, strict=True)), [Assign(out.at(idx), src.at(idx))]))
    return seen_locals
