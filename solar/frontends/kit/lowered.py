"""What lowering a traced program produces, for every tracer: `LoweredProgram`.

Contract: frozen values built by a `solar.frontends.kit.LoweringDriver`, read by the
frontend's reference (which fills the interface names with real values) and by its
`Frontend` (which hands program, coverage and keep-alive to the pipeline). The interface
follows the kit naming (`solar.frontends.kit.naming`). Two fields serve one tracer only
and stay empty for the other: ``constant_values`` (JAX: jaxpr constants, whose values the
capture holds; PyTorch constants are replayed) and ``cond_regions`` (JAX's ``lax.cond``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solar.frontends.kit.coverage import UncoveredOp
from solar.ir import Program

__all__ = ["CondRegion", "LoweredProgram", "UncoveredValue"]


@dataclass(frozen=True, slots=True)
class UncoveredValue:
    """A program input standing for one output of an uncovered op.

    The reference run supplies its real value, so the rest of the program still runs.

    Attributes:
        name: the IR tensor name (``u<k>_<op>``, see `uncovered_name`).
        site: where the op is: ``(call index,)`` for an ATen call; for a jaxpr equation,
            the equation indices from the top-level jaxpr through inlined call bodies.
        output: which output of the op.
    """

    name: str
    site: tuple[int, ...]
    output: int = 0


@dataclass(frozen=True, slots=True)
class CondRegion:
    """The kernels of one value-dependent branch region (a top-level ``lax.cond``).

    Each branch's kernels run under a guard ``if pred[] == k``; exactly one branch
    executes. See docs/jax.md, "cond": a lower bound must count, per region, the minimum
    over branches (FLOPs and bytes separately), never the sum. Regions nest: the kernels
    of a cond inside a branch are also listed in that branch.

    Attributes:
        name: a label (``cond0``...).
        predicate: the rank-0 integer tensor (or literal) selecting the branch.
        branches: kernel names of each branch, in branch order.
    """

    name: str
    predicate: str
    branches: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class LoweredProgram:
    """A traced program lowered to IR, with its interface and coverage.

    Attributes:
        program: the IR program (unverified).
        inputs: one per input leaf of the source program: its IR name (``x<k>``), or
            ``None`` for a leaf the IR does not read (not a tensor, unrepresentable dtype).
        params: ``(source key, IR name)`` of each parameter the program reads: the
            ``state_dict`` key (PyTorch); JAX binds parameters by position, its key is
            the IR name.
        outputs: one per output leaf: its IR name (``y<k>``), or ``None`` when the IR
            does not produce it (not a tensor, unrepresentable dtype).
        constants: ``(source name, IR name)`` of the other constant tensors it reads
            (PyTorch: tensor attributes and lifted literals).
        uncovered_values: the extra inputs standing for uncovered ops' outputs.
        generated: of those, the ones holding the draws of a random op that was lowered
            (a copy from the drawn values; see `solar.ir.fill_generated`).
        coverage: the uncovered ops, most bytes first (empty when fully covered).
        keep_alive: program tensors that uncovered ops read. Nothing in the IR reads
            them, but the real program does: dead-code elimination must keep them
            (``eliminate_dead_code(program, keep=...)``), or the work feeding an
            uncovered op would not be charged.
        ops_seen: ops the driver saw (ATen calls; kernel-level jaxpr equations).
        ops_lowered: of those, how many were lowered.
        mutated: IR names of inputs and parameters the program writes in place.
        notes: remarks for the report (dropped outputs, cond regions...).
        constant_values: ``(IR name, value)`` of constants the lowering captured (JAX).
        cond_regions: value-dependent branch regions (JAX; see `CondRegion`).
        module_paths: dotted scopes the kernels were named under (JAX name stacks).
        kernel_sources: ``(kernel, "file.py:line")``: the user's source line of the op
            each kernel was lowered from, where the frontend knows it.
    """

    program: Program
    inputs: tuple[str | None, ...]
    params: tuple[tuple[str, str], ...]
    outputs: tuple[str | None, ...]
    constants: tuple[tuple[str, str], ...] = ()
    uncovered_values: tuple[UncoveredValue, ...] = ()
    coverage: tuple[UncoveredOp, ...] = ()
    keep_alive: tuple[str, ...] = ()
    ops_seen: int = 0
    ops_lowered: int = 0
    mutated: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    constant_values: tuple[tuple[str, np.ndarray], ...] = field(
        default=(), compare=False, repr=False
    )
    cond_regions: tuple[CondRegion, ...] = ()
    generated: tuple[str, ...] = ()
    module_paths: tuple[str, ...] = ()
    kernel_sources: tuple[tuple[str, str], ...] = ()

    @property
    def fully_covered(self) -> bool:
        """True when every op was lowered."""
        return not self.coverage

    @property
    def uncovered_share(self) -> float:
        """Share of the program's tensor bytes in uncovered ops."""
        return min(1.0, sum(u.bytes_share for u in self.coverage))
