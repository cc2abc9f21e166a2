"""Framework-free emitters: one per op family, shaped like its most general primitive.

Contract: an emitter takes the kit's `LowerCtx`, the output `TensorInfo`, its operands
(`Operand`: a tensor, a view or a literal) and a spec of the primitive's parameters, and
emits the family's one kernel. The PyTorch and JAX op modules of the same name
(``pytorch/ops_conv.py``, ``jaxfe/ops_conv.py``...) are adapters from their arguments to
the spec. No torch, no jax.

* `emit_dot_general` (contraction.py): every matmul-like op.
* `emit_conv` (conv.py): every convolution, transposed ones included;
  `emit_conv_weight_grad` a convolution's weight gradient as one.
* `emit_reduce_window` / `window_reduce` (pool.py): windowed reductions, every pooling op;
  `emit_select_scatter` the gradient of max/min pooling.
"""

from __future__ import annotations

from solar.frontends.kit.emit.contraction import DotDims, Epilogue, emit_dot_general
from solar.frontends.kit.emit.conv import ConvSpec, Layout, emit_conv, emit_conv_weight_grad
from solar.frontends.kit.emit.operand import Operand
from solar.frontends.kit.emit.pool import (
    Loop,
    Selector,
    Window,
    WindowFn,
    WindowSpec,
    emit_reduce_window,
    emit_select_scatter,
    pool_nest,
    select_by_compare,
    select_by_index,
    window_reduce,
)
from solar.frontends.kit.emit.window import window_source

__all__ = [
    "ConvSpec",
    "DotDims",
    "Epilogue",
    "Layout",
    "Loop",
    "Operand",
    "Selector",
    "Window",
    "WindowFn",
    "WindowSpec",
    "emit_conv",
    "emit_conv_weight_grad",
    "emit_dot_general",
    "emit_reduce_window",
    "emit_select_scatter",
    "pool_nest",
    "select_by_compare",
    "select_by_index",
    "window_reduce",
    "window_source",
]
