"""Reference values for validating a lowered program against eager PyTorch.

Contract: ``(LoweredProgram, TorchCapture) -> (inputs, outputs)`` as
``dict[IR tensor name, np.ndarray]``: the real program (seeded, on CPU) runs once on its
real inputs; inputs hold every input, parameter and constant the IR reads plus, for a
partially covered program, the real outputs of the uncovered calls (the IR's extra
``u<call>_<op>`` inputs); outputs hold the returned tensors. Values of 16/8-bit float
types are widened to f32 (as the executor stores them).

For programs too large to run for real, `reference_at_reduced_sizes` re-captures the
model file with its module-level size constants scaled down until the program fits a
byte budget, and returns the program at those sizes with its reference data.

Error codes: E0508 a constant's value was not captured; E0511 no reduced size fits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.kit import IR_DTYPES, LoweredProgram
from solar.frontends.pytorch.capture import TorchCapture, capture_program, replay_values
from solar.frontends.pytorch.driver import lower_capture
from solar.frontends.pytorch.loader import source_for_file
from solar.frontends.pytorch.registry import OpFallback
from solar.ir.traversal import eval_int

__all__ = [
    "ReducedReference",
    "program_bytes",
    "reference_at_reduced_sizes",
    "reference_data",
    "size_candidates",
]

Arrays = dict[str, np.ndarray]


def reference_data(lowered: LoweredProgram, capture: TorchCapture) -> tuple[Arrays, Arrays]:
    """Run the real program and return (inputs, outputs) keyed by IR tensor name.

    Raises:
        FrontendError: E0501 user code raised; E0506 the real run diverged from the
            capture; E0508 a constant's value is unavailable.
    """
    keep = frozenset(v.site[0] for v in lowered.uncovered_values)
    vals = replay_values(capture, keep=keep)
    inputs: Arrays = {}
    for name, arr in zip(lowered.inputs, vals.inputs, strict=False):
        if name is not None and arr is not None:
            inputs[name] = arr
    for key, name in lowered.params:
        inputs[name] = vals.params[key]
    for key, name in lowered.constants:
        if key not in vals.constants:
            raise FrontendError(
                f"the value of constant tensor `{key}` was not captured", code="E0508"
            )
        inputs[name] = vals.constants[key]
    for uv in lowered.uncovered_values:
        value = vals.kept[uv.site[0]][uv.output]
        if value is not None:
            inputs[uv.name] = value
    outputs: Arrays = {}
    for name, arr in zip(lowered.outputs, vals.outputs, strict=False):
        if name is not None and arr is not None:
            outputs[name] = _as_declared(lowered, name, arr)
    return inputs, outputs


def _as_declared(lowered: LoweredProgram, name: str, arr: np.ndarray) -> np.ndarray:
    """Reshape an output to its IR declaration (outputs that are reshapes of a temp)."""
    decl = lowered.program.tensor(name)
    shape = tuple(eval_int(d, {}) for d in decl.shape)
    return arr.reshape(shape) if arr.shape != shape and arr.size == int(np.prod(shape)) else arr


def program_bytes(capture: TorchCapture) -> int:
    """Bytes a real run may touch: inputs, parameters and every call's new outputs."""
    total = capture.info.input_bytes + capture.info.param_bytes
    for call in capture.calls:
        if call.kind in ("functional", "out"):
            for m in call.outputs:
                if m is not None:
                    d = IR_DTYPES.get(m.dtype)
                    total += m.numel * (d.itemsize_bytes if d is not None else 8)
    return total


_SIZE_WORDS = (
    "batch",
    "seq",
    "len",
    "size",
    "dim",
    "height",
    "width",
    "hidden",
    "feature",
    "channel",
    "token",
    "vocab",
    "embed",
    "num_",
    "n_",
    "ffn",
    "intermediate",
)
_FIXED_WORDS = (
    "kernel",
    "stride",
    "pad",
    "dilation",
    "group",
    "head",
    "layer",
    "seed",
    "window",
    "scale",
    "block",
    "patch",
)
_LETTERS = re.compile(r"^[A-Z][0-9]?$|^[bnmkltdhwcse]$")
_PRIORITY = ("batch", "seq", "len", "token")


def size_candidates(sizes: Mapping[str, int]) -> list[str]:
    """Module constants that look like sizes (> 8), most reducible first.

    >>> size_candidates({"batch_size": 128, "kernel_size": 3, "dim": 4096, "num_heads": 32})
    ['batch_size', 'dim']
    """
    out = []
    for name, value in sizes.items():
        low = name.lower()
        if value <= 8 or any(w in low for w in _FIXED_WORDS):
            continue
        if any(w in low for w in _SIZE_WORDS) or _LETTERS.match(name):
            out.append(name)

    def rank(n: str) -> tuple[int, str]:
        low = n.lower()
        hits = [k for k, w in enumerate(_PRIORITY) if w in low]
        return (hits[0] if hits else len(_PRIORITY), n)

    return sorted(out, key=rank)


class ReducedReference(NamedTuple):
    """A program lowered at reduced sizes with its reference data."""

    lowered: LoweredProgram
    inputs: Arrays
    outputs: Arrays
    description: str


def _fmt_bytes(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def reference_at_reduced_sizes(
    path: str | Path,
    budget_bytes: int,
    *,
    entry: str | None = None,
    inputs: str | Path | None = None,
    op_fallback: OpFallback | None = None,
    train: bool = False,
    start: Mapping[str, int] | None = None,
) -> ReducedReference:
    """Lower a model file at sizes whose real run fits ``budget_bytes``, with reference data.

    Size constants (see `size_candidates`) are halved, all together when the program
    still captures, else one at a time, until `program_bytes` fits the budget. ``start``
    overrides module constants first (the sizes the user asked to analyse).

    Returns:
        ``(lowered, inputs, outputs, description)``; the description says which
        constants were scaled (or that the full size fits).

    Raises:
        FrontendError: E0511 when no reduction fits; loader/capture errors.
    """

    base = dict(start or {})

    def capture_at(over: dict[str, int]) -> TorchCapture:
        src = source_for_file(
            path, entry=entry, inputs=inputs, overrides={**base, **over}, train=train
        )
        return capture_program(src)

    capture = capture_at({})
    full = program_bytes(capture)
    original = dict(capture.info.sizes)
    overrides: dict[str, int] = {}
    current = full
    names = size_candidates(original)
    while current > budget_bytes:
        step = _reduce_once(capture_at, overrides, names, original)
        if step is None:
            raise FrontendError(
                f"no reduced size of {Path(path).name} fits {_fmt_bytes(budget_bytes)}",
                code="E0511",
                notes=(
                    f"smallest program tried: {_fmt_bytes(current)}",
                    f"size constants considered: {', '.join(names) or 'none'}",
                ),
            )
        overrides, capture = step
        current = program_bytes(capture)
    lowered = lower_capture(capture, op_fallback=op_fallback)
    ins, outs = reference_data(lowered, capture)
    if overrides:
        scaled = ", ".join(f"{k} {original[k]}->{v}" for k, v in sorted(overrides.items()))
        desc = f"scaled {scaled} (program {_fmt_bytes(full)} -> {_fmt_bytes(current)})"
    else:
        desc = f"full size ({_fmt_bytes(full)})"
    return ReducedReference(lowered, ins, outs, desc)


def _reduce_once(
    capture_at: Callable[[dict[str, int]], TorchCapture],
    overrides: dict[str, int],
    names: list[str],
    original: Mapping[str, int],
) -> tuple[dict[str, int], TorchCapture] | None:
    """One halving step: all candidates together, else the first single one that works."""
    live = [n for n in names if overrides.get(n, original[n]) > 8]
    trials = [live, *([n] for n in live)] if len(live) > 1 else [live]
    for group in trials:
        if not group:
            continue
        trial = dict(overrides)
        for n in group:
            trial[n] = max(1, overrides.get(n, original[n]) // 2)
        try:
            cap = capture_at(trial)
        except FrontendError:
            continue
        return trial, cap
    return None
