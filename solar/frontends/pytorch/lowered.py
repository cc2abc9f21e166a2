"""What lowering a capture produces: the program, its interface names, its coverage.

Contract: frozen dataclasses and the torch-dtype table; no torch import. Built by
driver.py, read by reference.py and the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from solar.diagnostics import FrontendError
from solar.frontends.pytorch.registry import OpCall
from solar.ir import DType, Program

__all__ = [
    "TORCH_DTYPES",
    "IOBinding",
    "LoweredProgram",
    "OpFallback",
    "UncoveredOp",
    "UncoveredValue",
    "ir_dtype",
]

TORCH_DTYPES: dict[str, DType] = {
    "float64": DType.F64,
    "float32": DType.F32,
    "float16": DType.F16,
    "bfloat16": DType.BF16,
    "float8_e4m3fn": DType.F8E4M3,
    "float8_e5m2": DType.F8E5M2,
    "int64": DType.I64,
    "int32": DType.I32,
    "int8": DType.I8,
    "bool": DType.BOOL,
}
"""torch dtype name -> IR dtype. Other dtypes (uint8, int16, complex) are rejected (E0510)."""

OpFallback = Callable[[OpCall], Program | None]
"""Per-op fallback: given an uncovered call, return a kernel program whose inputs are
``a0, a1, ...`` (the call's tensor arguments in order, args then kwargs, lists
flattened, at their logical shapes) and whose outputs are ``out0, out1, ...`` (the
call's tensor outputs), or ``None`` to leave the op uncovered."""


@dataclass(frozen=True, slots=True)
class UncoveredOp:
    """An ATen target the program uses but the IR does not cover.

    Attributes:
        target: overload name.
        count: number of calls.
        bytes_share: share of the program's tensor bytes (inputs+outputs of these calls
            over those of all calls), in ``[0, 1]``.
        reason: why it is uncovered (no lowering, unsupported variant...).
    """

    target: str
    count: int
    bytes_share: float
    reason: str = "no lowering"


@dataclass(frozen=True, slots=True)
class UncoveredValue:
    """An extra program input holding the real output of an uncovered call."""

    name: str
    call_index: int
    output_index: int


@dataclass(frozen=True, slots=True)
class IOBinding:
    """IR names of the program's interface.

    Attributes:
        inputs: one per flattened input leaf: the IR name, ``None`` for non-tensors.
        params: ``(state_dict key, IR name)`` of the parameters/buffers the program reads.
        constants: ``(constant name, IR name)`` of other tensors it reads.
        outputs: one per flattened output leaf: the IR name, ``None`` for non-tensors.
        uncovered_values: extra inputs standing for uncovered calls' outputs.
        mutated: IR names of inputs/parameters the program writes in place.
    """

    inputs: tuple[str | None, ...]
    params: tuple[tuple[str, str], ...]
    constants: tuple[tuple[str, str], ...]
    outputs: tuple[str | None, ...]
    uncovered_values: tuple[UncoveredValue, ...]
    mutated: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LoweredProgram:
    """The result of lowering a capture.

    Attributes:
        program: the (unverified) IR program.
        binding: names of its interface tensors.
        coverage: uncovered targets (empty when fully covered).
        capture_name: the program name.
    """

    program: Program
    binding: IOBinding
    coverage: tuple[UncoveredOp, ...]
    capture_name: str

    @property
    def fully_covered(self) -> bool:
        """True when every call was lowered."""
        return not self.coverage

    @property
    def uncovered_share(self) -> float:
        """Share of the program's tensor bytes in uncovered calls."""
        return min(1.0, sum(u.bytes_share for u in self.coverage))


def ir_dtype(name: str) -> DType:
    """The IR dtype of a torch dtype name.

    Raises:
        FrontendError: E0510 for dtypes the IR cannot represent.
    """
    try:
        return TORCH_DTYPES[name]
    except KeyError:
        raise FrontendError(
            f"tensors of dtype {name} cannot be represented in the IR",
            code="E0510",
            notes=(f"supported: {', '.join(TORCH_DTYPES)}",),
        ) from None
