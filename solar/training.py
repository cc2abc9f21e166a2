"""Training-step phases: one program per phase, and the step's memory at its peak.

Contract: ``(Program, kernel -> Phase) -> tuple[PhaseProgram, ...]`` and
``-> StepMemory``; pure functions over the IR (the pipeline bounds each phase program
with the same models as the whole step). A phase's program holds the phase's kernels
(alias kernels excepted: they are free, Note [Alias kernels] in docs/bounds.md) and the
tensors they touch, re-roled at the phase boundary (Note [Phase boundaries]).

Note [Phase boundaries]: a value one phase hands to a later one (a saved activation,
a gradient) is an ``output`` of the phase that writes it and an ``input`` of the phase
that reads it, so every phase is bounded as if it ran alone: its bytes include writing
and re-reading what crosses the boundary. The whole step's bound is therefore at most
the sum of the phases' bounds (a fused step need not write a saved activation to DRAM
only to read it back); the report gives both. A value no kernel produces (an uncovered
op's output, an intermediate for the bounds) stays an intermediate in every phase.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from solar.ir import (
    Access,
    Assign,
    If,
    Kernel,
    Program,
    Reduce,
    TensorDecl,
    eval_int,
    walk_exprs,
    walk_stmts,
)

__all__ = [
    "PHASES",
    "Phase",
    "PhaseProgram",
    "StepInfo",
    "StepMemory",
    "phase_of_kernel",
    "split_phases",
    "step_memory",
]

Phase: TypeAlias = Literal["forward", "backward", "optimizer"]
"""The phases of a training step, in order."""

PHASES: Final[tuple[Phase, ...]] = ("forward", "backward", "optimizer")


def phase_of_kernel(name: str) -> Phase:
    """The phase of a kernel that a frontend named after it (``backward_<op>``,
    ``optimizer_<op>``; any other kernel is the forward's).

    >>> phase_of_kernel("backward_dot_general"), phase_of_kernel("Dense_0_add")
    ('backward', 'forward')
    """
    for phase in PHASES[1:]:
        if name.startswith(f"{phase}_"):
            return phase
    return "forward"


@dataclass(frozen=True, slots=True)
class StepInfo:
    """What a frontend says about a training step it captured.

    Attributes:
        loss: the loss, in words.
        optimizer: the update, in words.
        phase_of: the phase of each kernel, by kernel name.
    """

    loss: str
    optimizer: str
    phase_of: Callable[[str], Phase]


@dataclass(frozen=True, slots=True)
class PhaseProgram:
    """One phase of a step as a program of its own.

    Attributes:
        phase: which phase.
        program: its kernels and the tensors they touch (Note [Phase boundaries]).
    """

    phase: Phase
    program: Program


@dataclass(frozen=True, slots=True)
class StepMemory:
    """Bytes resident during a training step (all figures at the analysed sizes).

    Attributes:
        parameter_bytes: parameters (and buffers) the forward reads; in a functional
            step (JAX), the inputs both the forward or backward and the update read.
        optimizer_state_bytes: state only the update reads (moments, momentum buffers;
            in a functional step, the inputs only the update reads).
        saved_activation_bytes: values the forward writes and the backward reads (what
            autograd saves for the backward).
        gradient_bytes: the gradients the backward hands on (outputs, or values the update
            reads).
        input_bytes: the step's data inputs (batch, targets).
        peak_bytes: a lower estimate of the step's peak: at the end of the forward,
            parameters, optimizer state, inputs and saved activations are all resident
            (the backward's own temporaries and gradients come on top as it runs).
    """

    parameter_bytes: int
    optimizer_state_bytes: int
    saved_activation_bytes: int
    gradient_bytes: int
    input_bytes: int

    @property
    def peak_bytes(self) -> int:
        """See the class docstring."""
        return (
            self.parameter_bytes
            + self.optimizer_state_bytes
            + self.input_bytes
            + self.saved_activation_bytes
        )


@dataclass(frozen=True, slots=True)
class _Use:
    reads: frozenset[str]
    writes: frozenset[str]


def _uses(kernel: Kernel) -> _Use:
    reads: set[str] = set()
    writes: set[str] = set()
    for stmt, _ in walk_stmts(kernel.body):
        exprs = []
        if isinstance(stmt, Assign | Reduce):
            writes.add(stmt.target.tensor)
            exprs = [stmt.value, *stmt.target.indices]
            if isinstance(stmt, Reduce):
                reads.add(stmt.target.tensor)
        elif isinstance(stmt, If):
            exprs = [stmt.cond]
        for e in exprs:
            reads.update(a.tensor for x in [e] for a in walk_exprs(x) if isinstance(a, Access))
    local = {d.name for d in kernel.locals}
    return _Use(frozenset(reads - local), frozenset(writes - local))


def _role(
    decl: TensorDecl,
    phase: Phase,
    use: _Use,
    writers: Mapping[str, set[Phase]],
    readers: Mapping[str, set[Phase]],
) -> TensorDecl:
    if decl.role in ("input", "param"):
        return decl
    written_here = decl.name in use.writes
    if not written_here:
        return decl if not writers.get(decl.name) else dataclasses.replace(decl, role="input")
    read_later = bool(readers.get(decl.name, set()) - {phase})
    if decl.role == "output" or read_later:
        return dataclasses.replace(decl, role="output")
    return decl


def split_phases(program: Program, phase_of: Callable[[str], Phase]) -> tuple[PhaseProgram, ...]:
    """The non-empty phases of ``program``, each as its own program (in step order).

    Args:
        program: a training step's program (for the bounds: dead code removed).
        phase_of: the phase of a kernel, by kernel name.

    Returns:
        One `PhaseProgram` per phase that has kernels.
    """
    uses = {k.name: _uses(k) for k in program.kernels if not k.alias}
    writers: dict[str, set[Phase]] = {}
    readers: dict[str, set[Phase]] = {}
    for k in program.kernels:
        if k.alias:
            continue
        ph = phase_of(k.name)
        for t in uses[k.name].writes:
            writers.setdefault(t, set()).add(ph)
        for t in uses[k.name].reads:
            readers.setdefault(t, set()).add(ph)
    out: list[PhaseProgram] = []
    for phase in PHASES:
        kernels = tuple(k for k in program.kernels if not k.alias and phase_of(k.name) == phase)
        if not kernels:
            continue
        use = _Use(
            frozenset().union(*(uses[k.name].reads for k in kernels)),
            frozenset().union(*(uses[k.name].writes for k in kernels)),
        )
        touched = use.reads | use.writes
        tensors = tuple(
            _role(d, phase, use, writers, readers) for d in program.tensors if d.name in touched
        )
        sub = dataclasses.replace(
            program, name=f"{program.name}_{phase}", tensors=tensors, kernels=kernels
        )
        out.append(PhaseProgram(phase, sub))
    return tuple(out)


def _nbytes(decl: TensorDecl, sizes: Mapping[str, int]) -> int:
    n = decl.dtype.itemsize_bytes
    for d in decl.shape:
        n *= eval_int(d, sizes)
    return n


def step_memory(
    program: Program, phase_of: Callable[[str], Phase], sizes: Mapping[str, int]
) -> StepMemory:
    """What a step keeps resident, from which phase writes and reads each tensor.

    Args:
        program: the step's program.
        phase_of: the phase of a kernel, by kernel name.
        sizes: the size bindings.

    Returns:
        The byte counts of `StepMemory`.
    """
    writers: dict[str, set[Phase]] = {}
    readers: dict[str, set[Phase]] = {}
    for k in program.kernels:
        ph = phase_of(k.name)
        use = _uses(k)
        for t in use.writes:
            writers.setdefault(t, set()).add(ph)
        for t in use.reads:
            readers.setdefault(t, set()).add(ph)
    params = state = saved = grads = inputs = 0
    for d in program.tensors:
        w, r = writers.get(d.name, set()), readers.get(d.name, set())
        size = _nbytes(d, sizes)
        # A functional step (JAX) takes its parameters and optimizer state as inputs:
        # an input the update reads is one or the other, as a parameter is.
        if d.role == "param" or (d.role == "input" and "optimizer" in r):
            if r & {"forward", "backward"}:
                params += size
            elif r:
                state += size
        elif d.role == "input":
            inputs += size
        elif "forward" in w and "backward" in r:
            saved += size
        elif "backward" in w and (d.role == "output" or "optimizer" in r):
            grads += size
    return StepMemory(params, state, saved, grads, inputs)
