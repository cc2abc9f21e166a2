"""Results of the jaxpr lowering: the lowered program and what else the pipeline needs.

Contract: plain frozen values produced by `solar.frontends.jaxfe.lower_jaxpr`; the
coverage entries are the PyTorch frontend's `UncoveredOp` (torch-free), so reports treat
both frontends alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solar.frontends.pytorch.driver import UncoveredOp  # torch-free; shared with that frontend
from solar.ir import Program

__all__ = ["CondRegion", "ExtraInput", "LoweredProgram", "UncoveredOp"]


@dataclass(frozen=True, slots=True)
class ExtraInput:
    """A program input that is not a ``get_inputs()`` array or a parameter.

    Attributes:
        name: the IR tensor name.
        kind: ``"const"`` (a jaxpr constant; ``value`` holds it) or ``"uncovered"`` (the
            output ``out_index`` of the equation at ``path``; the reference run supplies it).
        path: equation indices from the top-level jaxpr through inlined call bodies.
        out_index: which output of that equation.
        value: the constant's value (``kind == "const"``).
    """

    name: str
    kind: str
    path: tuple[int, ...] = ()
    out_index: int = 0
    value: np.ndarray | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class CondRegion:
    """The kernels of one top-level ``lax.cond``/``lax.switch``.

    Each branch's kernels run under a value-dependent guard ``if pred[] == k``; exactly one
    branch executes. See docs/jax.md, "cond": a lower bound must count, per region, the
    minimum over branches (FLOPs and bytes separately), never the sum. Regions nest: the
    kernels of a cond inside a branch are also listed in that branch.

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
    """The lowering result.

    Attributes:
        program: the IR program (unverified).
        inputs: IR names of the ``get_inputs()`` arrays (``x0``...), in order.
        params: IR names of the Flax parameters (``p_...``), in order.
        outputs: IR names of the flattened outputs (``y0``...), in order.
        extra_inputs: constants and uncovered-op outputs the program also reads.
        coverage: the uncovered primitives, most bytes first (empty when fully covered).
        equations: kernel-level equations seen (inlined calls counted by their body).
        lowered_equations: of those, how many were lowered (views included).
        cond_regions: top-level conds (branch kernels; see `CondRegion`).
        notes: remarks for the report (dropped outputs, cond regions...).
        uncovered_reads: program-level tensors that uncovered equations read. Nothing in
            the IR reads them, but the real program does: dead-code elimination must
            keep them (``eliminate_dead_code(program, keep=...)``), or the work feeding
            an uncovered op (a model before its ``top_k``) would not be charged.
    """

    program: Program
    inputs: tuple[str, ...]
    params: tuple[str, ...]
    outputs: tuple[str, ...]
    extra_inputs: tuple[ExtraInput, ...]
    coverage: tuple[UncoveredOp, ...]
    equations: int = 0
    lowered_equations: int = 0
    cond_regions: tuple[CondRegion, ...] = ()
    notes: tuple[str, ...] = ()
    uncovered_reads: tuple[str, ...] = ()

    @property
    def fully_covered(self) -> bool:
        """True when every equation was lowered."""
        return not self.coverage

    @property
    def uncovered_share(self) -> float:
        """Share of the program's tensor bytes in uncovered equations."""
        return min(1.0, sum(u.bytes_share for u in self.coverage))
