"""Reference data for the LLM frontend: run the real torch program once.

Contract: ``model file -> TorchReference`` with the built model, its inputs and the
real outputs, and the same values keyed by the IR naming convention of
`solar.frontends.kit.naming` (``x<i>``, ``p_<key>``, ``y<i>``). The tracer is not used:
this path exists for programs the tracer cannot capture. torch is imported lazily.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from solar.frontends.kit import input_name, output_name, param_name

__all__ = ["TorchReference", "torch_reference"]


@dataclass(frozen=True, slots=True)
class TorchReference:
    """A built torch program with real inputs and outputs."""

    model: Any
    args: tuple[Any, ...]
    output_tensors: tuple[Any, ...]
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]


def _np(t: Any) -> np.ndarray:
    import torch

    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16, torch.float16) or "float8" in str(t.dtype):
        t = t.float()
    return np.asarray(t.numpy())


def torch_reference(path: Path, *, entry: str | None = None) -> TorchReference:
    """Build the model file's program for real (seeded) and run it once on CPU.

    Raises:
        FrontendError: the file raises, lacks its entry points or returns non-tensors.
    """
    import torch
    from torch.utils import _pytree

    from solar.frontends.pytorch.loader import instantiate, source_for_file, user_code

    inst = instantiate(source_for_file(path, entry=entry))
    model = inst.module if inst.module is not None else inst.fn
    with torch.no_grad(), user_code("running the model"):
        result = inst.fn(*inst.args)
    outs = tuple(x for x in _pytree.tree_leaves(result) if isinstance(x, torch.Tensor))
    inputs = {input_name(i): _np(a) for i, a in enumerate(inst.args) if isinstance(a, torch.Tensor)}
    state = model.state_dict() if hasattr(model, "state_dict") else {}
    inputs.update({param_name(k): _np(v) for k, v in state.items()})
    outputs = {output_name(i): _np(t) for i, t in enumerate(outs)}
    return TorchReference(model, tuple(inst.args), outs, inputs, outputs)
