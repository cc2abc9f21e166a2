"""Re-run a captured PyTorch program for real and collect the values validation needs.

Contract: ``TorchCapture -> RealValues``. `replay_values` rebuilds the program with real
tensors and runs it under the same recorder as the capture (recorder.py), returning its
inputs, parameters, constants, outputs and the outputs of chosen calls, and checking
that the real run performs the same calls as the capture (E0506 otherwise; Note
[Diverging replay]).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.pytorch.caches import caches_filled_here_cleared
from solar.frontends.pytorch.capture import plain_outputs
from solar.frontends.pytorch.capture_types import NamedTensor, TorchCapture, to_numpy
from solar.frontends.pytorch.loader import instantiate
from solar.frontends.pytorch.recorder import (
    Ids,
    Recorder,
    register_tensors,
    run_recorded,
    setting,
)

__all__ = ["RealValues", "replay_values"]


# Note [Diverging replay]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A program may branch on tensor values, or on whether it is being traced (transformers
# builds its attention masks one way under FakeTensors and another way in eager). The
# capture then holds the branch the capture took, and the real replay takes another.
# When no intermediate value is needed by call position (no uncovered or captured op),
# the replay goes on: the inputs, parameters and outputs are keyed by name and position
# in the program's interface, so validation still compares the IR's outputs with the
# real program's, end to end; constants lifted after the divergence are matched by
# shape and dtype, and a mismatch shows up as a failed validation, never a silent pass.
# Values needed by call position (a random draw, an uncovered op's outputs) are kept by
# op and occurrence (the k-th ``bernoulli_`` of the real run is the k-th of the
# capture): identical to the call index while the runs agree, and still found after
# the divergence (a transformers model in training mode: its mask is built differently,
# its dropout draws are the same). A kept call the real run never made, or made with
# other shapes, is E0506. The report notes the divergence (`RealValues.diverged`).


@dataclass(frozen=True, slots=True)
class RealValues:
    """Values of a real run, keyed to a capture.

    Attributes:
        inputs: flattened input leaves (numpy for tensors, ``None`` otherwise), before
            the program ran (so in-place mutation does not leak in).
        params: parameter/buffer values by state_dict name.
        constants: constant values by constant name.
        outputs: flattened output leaves.
        kept: outputs of the requested calls, by call index.
        diverged: where the real run left the captured call sequence (Note [Diverging
            replay]), or ``None``.
    """

    inputs: tuple[np.ndarray | None, ...]
    params: Mapping[str, np.ndarray]
    constants: Mapping[str, np.ndarray]
    outputs: tuple[np.ndarray | None, ...]
    kept: Mapping[int, tuple[np.ndarray | None, ...]]
    diverged: str | None = None


def replay_values(capture: TorchCapture, *, keep: frozenset[int] = frozenset()) -> RealValues:
    """Run the captured program for real (seeded) and collect reference values.

    Args:
        capture: the capture to replay; its source is rebuilt with real tensors.
        keep: call indices whose outputs to return.

    Returns:
        The values, keyed as the capture names them.

    Raises:
        FrontendError: E0506 if the real run performs different calls.
    """
    import torch
    from torch.utils._pytree import tree_flatten

    inst = instantiate(capture.source)
    leaves, _ = tree_flatten(inst.input_tree())
    inputs = tuple(to_numpy(x) if isinstance(x, torch.Tensor) else None for x in leaves)
    params = {k: to_numpy(v) for k, v in inst.state.items()}
    ids = Ids()
    register_tensors(inst, ids)
    rec = Recorder(ids, inst.attr_names, keep, tuple(c.target for c in capture.calls))
    # the real run leaves no real tensor in a cache for a later fake capture (Note
    # [Function caches] in caches.py)
    with caches_filled_here_cleared(), _default_dtype(
        torch.float64 if capture.source.float64 else None
    ):
        out = run_recorded(inst, rec, None)
    if rec.diverged is None and len(rec.calls) != len(capture.calls):
        raise FrontendError(
            f"the real run made {len(rec.calls)} calls, the capture {len(capture.calls)}",
            code="E0506",
        )
    _check_kept(capture, keep, rec)
    out_leaves, _ = tree_flatten(plain_outputs(out))
    outputs = tuple(to_numpy(x) if isinstance(x, torch.Tensor) else None for x in out_leaves)
    constants: dict[str, np.ndarray] = {}
    if rec.diverged is None:
        pairs = list(zip(capture.constants, rec.constants, strict=False))
    else:
        pairs = _match_constants(capture.constants, rec.constants)
    for cap_const, real_const in pairs:
        if real_const.value is not None:
            constants[cap_const.name] = real_const.value
    return RealValues(inputs, params, constants, outputs, rec.kept, rec.diverged)


def _default_dtype(dtype: Any) -> contextlib.AbstractContextManager[None]:
    """``dtype`` as torch's default floating type meanwhile (``None``: unchanged): a
    float64 replay's own factories (``torch.zeros(n)`` in a forward) make float64."""
    import torch

    return setting(torch.get_default_dtype, torch.set_default_dtype, dtype)


def _check_kept(capture: TorchCapture, keep: frozenset[int], rec: Recorder) -> None:
    """E0506 unless the real run made every kept call, with the captured shapes."""
    for index in sorted(keep):
        values = rec.kept.get(index)
        call = capture.calls[index]
        shapes = [m.shape if m is not None else None for m in call.outputs]
        got = [tuple(v.shape) if v is not None else None for v in values or ()]
        if values is None or any(
            s is not None and g is not None and tuple(s) != g
            for s, g in zip(shapes, got, strict=False)
        ):
            raise FrontendError(
                f"the real run diverged from the capture {rec.diverged or ''}, and call {index} "
                f"({call.target}), whose values the program needs, "
                + ("never ran" if values is None else f"made shapes {got}, not {shapes}"),
                code="E0506",
                notes=("the program's control flow depends on tensor values",),
            )


def _match_constants(
    captured: Sequence[NamedTensor], real: Sequence[NamedTensor]
) -> list[tuple[NamedTensor, NamedTensor]]:
    """Pair each captured constant with the next unused real one of its shape and dtype."""
    used: set[int] = set()
    pairs = []
    for c in captured:
        for k, r in enumerate(real):
            if k not in used and (r.meta.shape, r.meta.dtype) == (c.meta.shape, c.meta.dtype):
                used.add(k)
                pairs.append((c, r))
                break
    return pairs
