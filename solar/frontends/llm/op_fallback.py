"""Per-op LLM fallback for the PyTorch tracer.

Contract: ``(LLMConfig, ReferenceCheck) -> OpFallback``. Given an ATen call the tracer
cannot lower, ask the model for a one-kernel IR program with inputs ``a0, a1, ...`` (the
call's tensor arguments in order) and outputs ``out0, ...``, and accept it only after
the pipeline's check finds it reproduces the real op on random data (the op itself runs
in torch, on CPU). A translation that fails leaves the op uncovered (reported, never
free). torch is imported lazily.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from solar.diagnostics import LLMError
from solar.frontends.kit import FRAMEWORK_DTYPE_NAMES, TensorInfo
from solar.frontends.llm.config import LLMConfig
from solar.frontends.llm.task import TensorSpec, TranslationTask
from solar.frontends.llm.translate import translate_program
from solar.ir import Program

if TYPE_CHECKING:
    from solar.frontends.protocol import ReferenceCheck

__all__ = ["make_op_fallback"]

log = logging.getLogger(__name__)


def _flat(values: Any) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, list | tuple):
            out.extend(_flat(v))
        else:
            out.append(v)
    return out


def _op_overload(target: str) -> Any:
    import torch

    namespace, op, overload = target.split(".", 2)
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)


def _reference_text(target: str, overload: Any) -> str:
    """The op's schema plus, when torch has one, its Python decomposition source."""
    text = [f"# ATen op {target}", f"# schema: {overload._schema}"]
    try:
        from torch._decomp import decomposition_table

        fn = decomposition_table.get(overload)
        if fn is not None:
            text.append(inspect.getsource(fn))
    except (ImportError, OSError, TypeError):
        pass
    return "\n".join(text) + "\n"


_CHECK_BUDGET_S = 30.0
"""Time budget of the check of one op's translation."""


def make_op_fallback(config: LLMConfig, check: ReferenceCheck) -> Callable[[Any], Program | None]:
    """An `OpFallback` for `solar.frontends.pytorch.lower_capture` backed by ``config``.

    ``check`` accepts or rejects each translation on the op's real inputs and outputs.
    """

    def fallback(call: Any) -> Program | None:
        import torch

        try:
            overload = _op_overload(call.target)
        except (AttributeError, ValueError):
            return None
        tensors = [
            v for v in _flat([*call.args, *call.kwargs.values()]) if isinstance(v, TensorInfo)
        ]
        specs = [TensorSpec(f"a{i}", "input", t.dtype, t.shape) for i, t in enumerate(tensors)]
        outs = [o for o in call.outputs if o is not None]
        specs += [TensorSpec(f"out{i}", "output", o.dtype, o.shape) for i, o in enumerate(outs)]
        scalars = [
            (f"arg{i}", repr(v))
            for i, v in enumerate(call.args)
            if not isinstance(v, TensorInfo | list | tuple)
        ]
        task = TranslationTask.for_op(call.target, str(overload._schema), specs, scalars=scalars)
        rng = np.random.default_rng(0)
        arrays = {
            s.name: (
                rng.standard_normal(s.shape).astype(np.float32)
                if s.dtype.is_float
                else rng.integers(0, 4, s.shape).astype(np.int64)
            )
            for s in specs
            if s.role == "input"
        }
        it = iter(arrays[s.name] for s in specs if s.role == "input")

        def to_torch(v: Any) -> Any:
            if isinstance(v, TensorInfo):
                return torch.from_numpy(next(it)).to(getattr(torch, FRAMEWORK_DTYPE_NAMES[v.dtype]))
            if isinstance(v, list | tuple):
                return type(v)(to_torch(x) for x in v)
            return v

        args = [to_torch(a) for a in call.args]
        kwargs = {k: to_torch(v) for k, v in call.kwargs.items()}
        got = overload(*args, **kwargs)
        got_flat = [
            g
            for g in _flat(got if isinstance(got, list | tuple) else [got])
            if isinstance(g, torch.Tensor)
        ]
        expected = {
            f"out{i}": g.detach().float().numpy() if g.is_floating_point() else g.numpy()
            for i, g in enumerate(got_flat)
        }

        def accept(program: Program) -> None:
            check(program, arrays, expected, time_budget_s=_CHECK_BUDGET_S)

        try:
            result = translate_program(
                _reference_text(call.target, overload), config=config, task=task, check=accept
            )
        except LLMError as err:
            log.warning("LLM fallback for %s failed: %s", call.target, err.message)
            return None
        return result.program

    return fallback
