"""Describe a PyTorch model as a whole-program `TranslationTask` (torch imported lazily).

Contract: ``(nn.Module, inputs) -> TranslationTask`` following the naming
convention of `solar.frontends.llm.task`: ``x<i>`` for ``get_inputs()[i]``,
``p_<key>`` for ``state_dict()`` entries, ``y<i>`` for the flattened tensor
outputs of one forward call (run here, under ``torch.no_grad()``, to learn the
output shapes). Only shapes and dtypes enter the task, never values, so the
task (and hence the cache key) is the same for any random inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from solar.frontends.kit import IR_DTYPES
from solar.frontends.llm.errors import E_BAD_CONFIG, LLMConfigError
from solar.frontends.llm.task import TensorSpec, TranslationTask, program_io_names
from solar.ir import DType

__all__ = ["program_task_from_torch", "torch_dtype_to_ir"]

def torch_dtype_to_ir(dtype: Any) -> DType:
    """Map a ``torch.dtype`` to the IR dtype.

    Raises:
        LLMConfigError: the dtype has no IR counterpart (E0609).
    """
    try:
        return IR_DTYPES[str(dtype).removeprefix("torch.")]
    except KeyError:
        message = f"dtype `{dtype}` has no Affine Loop IR dtype"
        raise LLMConfigError(message, code=E_BAD_CONFIG) from None


def program_task_from_torch(
    model: Any,
    inputs: Sequence[Any],
    *,
    outputs: Sequence[Any] | None = None,
    notes: str = "",
) -> TranslationTask:
    """Build the whole-program task for ``model(*inputs)``.

    Args:
        model: an instantiated ``torch.nn.Module`` (``Model(*get_init_inputs())``).
        inputs: the tensors of ``get_inputs()``, in order (non-tensors are rejected).
        outputs: the flattened tensor outputs if the caller already ran the
            model; otherwise the model is run once here to learn their shapes.
        notes: extra instructions for the model (part of the cache key).

    Returns:
        A ``"program"`` task with tensors ``x<i>``, ``p_<key>``, ``y<i>``.

    Raises:
        LLMConfigError: a non-tensor input, an unsupported dtype, or colliding
            parameter names (E0609).
    """
    import torch
    from torch.utils import _pytree

    for i, value in enumerate(inputs):
        if not isinstance(value, torch.Tensor):
            raise LLMConfigError(
                f"get_inputs()[{i}] is a {type(value).__name__}, not a tensor", code=E_BAD_CONFIG
            )
    state = model.state_dict()
    if outputs is None:
        with torch.no_grad():
            result = model(*inputs)
        outputs = [leaf for leaf in _pytree.tree_leaves(result) if isinstance(leaf, torch.Tensor)]
    names = program_io_names(len(inputs), list(state), len(outputs))
    specs: list[TensorSpec] = []
    for i, (name, value) in enumerate(zip(names.inputs, inputs, strict=True)):
        specs.append(_spec(name, "input", value, f"get_inputs()[{i}]"))
    for name, (key, value) in zip(names.params, state.items(), strict=True):
        specs.append(_spec(name, "param", value, f"state_dict()[{key!r}]"))
    for i, (name, value) in enumerate(zip(names.outputs, outputs, strict=True)):
        specs.append(_spec(name, "output", value, f"output {i} of forward()"))
    return TranslationTask.for_program(specs, framework="torch", notes=notes)


def _spec(name: str, role: Any, tensor: Any, origin: str) -> TensorSpec:
    return TensorSpec(name, role, torch_dtype_to_ir(tensor.dtype), tuple(tensor.shape), origin)
