"""The driver every tracer builds on: declaration, uncover-and-rollback, keep-alive, coverage.

Contract: a tracer's driver (`solar.frontends.pytorch.driver`, `solar.frontends.jaxfe.driver`)
subclasses `LoweringDriver` and walks its recorded program op by op. Per op it calls
`count` once, runs the op's lowering through `attempt` (which undoes everything the
lowering emitted when it raises `UnsupportedOpError`) and, when the op is not lowered,
calls `uncover` (a coverage row, and keep-alive of the tensors it reads) and declares
each of its outputs with `declare_uncovered` (a ``u<k>_<op>`` program input, filled by
the reference run). `lowered` freezes the walk into a `LoweredProgram`. Interface
tensors are declared with the kit naming (`solar.frontends.kit.naming`); ``exact=True``
makes a name that had to change an error, not a silent rename.

Rollback: what a lowering may emit is the program builder's state plus the lists a
driver registers with `journaled` (append-only lists and dicts); a checkpoint is their
lengths, and rolling back truncates them. The driver's own bookkeeping outside the
journal (its environment of values) is never touched by a lowering.

Error codes: E0512 an interface name is already taken (internal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.kit.builder import ProgramBuilder, sanitize_name
from solar.frontends.kit.coverage import CoverageLog
from solar.frontends.kit.lowered import CondRegion, LoweredProgram, UncoveredValue
from solar.frontends.kit.table import UnsupportedOpError
from solar.frontends.kit.values import TensorInfo
from solar.ir import DType, Program, Role

__all__ = ["Checkpoint", "LoweringDriver", "Unsupported"]

T = TypeVar("T")
J = TypeVar("J", list[Any], dict[Any, Any])


@dataclass(frozen=True, slots=True)
class Unsupported:
    """What `LoweringDriver.attempt` returns when the lowering rejected the op."""

    reason: str


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A driver state to roll back to: the builder's, and the journal's lengths."""

    builder: tuple[int, int, int, int]
    journal: tuple[int, ...]


class LoweringDriver:
    """Program builder, coverage log, uncovered values and notes of one lowering.

    Attributes:
        pb: the program being built.
        coverage: ops seen, bytes, uncovered ops and the tensors they read.
        uncovered: the declared uncovered values, in order.
        notes: remarks for the report.
        unsupported: the exceptions `attempt` treats as "this op is not covered".
    """

    unsupported: ClassVar[tuple[type[Exception], ...]] = (UnsupportedOpError,)

    def __init__(self, name: str) -> None:
        self.pb = ProgramBuilder(name)
        self.coverage = CoverageLog()
        self._journal: list[list[Any] | dict[Any, Any]] = []
        self.uncovered: list[UncoveredValue] = self.journaled([])
        self.notes: list[str] = self.journaled([])
        self.journaled(self.coverage.keep_alive)
        self.module_paths: set[str] = set()  # dotted scopes seen (the report's modules)

    def journaled(self, items: J) -> J:
        """Register an append-only list or dict that `rollback` truncates; returns it."""
        self._journal.append(items)
        return items

    def declare(
        self,
        role: Role,
        dtype: DType,
        shape: Sequence[int],
        hint: str,
        *,
        exact: bool = False,
    ) -> TensorInfo:
        """Declare a program-level tensor named after ``hint`` and return it as a value.

        Raises:
            FrontendError: E0512 when ``exact`` and the name ``hint`` is already taken.
        """
        ref = self.pb.tensor(role, dtype, tuple(shape), hint)
        if exact and ref.name != sanitize_name(hint):
            raise FrontendError(f"name clash for {hint}", code="E0512")
        return TensorInfo(ref, tuple(int(d) for d in shape), dtype)

    def checkpoint(self) -> Checkpoint:
        """The state to return to if an op turns out uncovered."""
        return Checkpoint(self.pb.checkpoint(), tuple(len(j) for j in self._journal))

    def rollback(self, cp: Checkpoint) -> None:
        """Forget everything emitted since ``cp``."""
        self.pb.rollback(cp.builder)
        for items, n in zip(self._journal, cp.journal, strict=True):
            if isinstance(items, list):
                del items[n:]
            else:
                for key in list(items)[n:]:
                    del items[key]

    def attempt(self, lower: Callable[[], T]) -> T | Unsupported:
        """Run one op's lowering; if it rejects the op, undo what it emitted.

        Returns:
            What ``lower`` returned, or `Unsupported` with the lowering's message.
        """
        cp = self.checkpoint()
        try:
            return lower()
        except self.unsupported as err:
            self.rollback(cp)
            return Unsupported(str(err))

    def count(self, nbytes: int) -> None:
        """One more op, of ``nbytes`` input+output bytes (every op, covered or not)."""
        self.coverage.count(nbytes)

    def uncover(
        self,
        target: str,
        nbytes: int,
        reason: str,
        reads: Iterable[object],
        counted_flops: int | None = None,
    ) -> None:
        """Report an uncovered op and keep the program tensors it reads alive.

        Args:
            target: the op name (coverage rows group by it).
            nbytes: its input+output bytes, as given to `count`.
            reason: why it is uncovered (the first reason per target is reported).
            reads: its operands; the `TensorInfo` ones name tensors to keep alive.
            counted_flops: its FLOPs by an independent counter, if the frontend has one.
        """
        names = [x.ref.name for x in reads if isinstance(x, TensorInfo)]
        self.coverage.uncover(target, nbytes, reason, names, counted_flops)

    def declare_uncovered(
        self,
        hint: str,
        dtype: DType,
        shape: Sequence[int],
        site: Sequence[int],
        output: int,
    ) -> TensorInfo:
        """Declare the program input standing for output ``output`` of the op at ``site``."""
        info = self.declare("input", dtype, shape, hint)
        self.uncovered.append(UncoveredValue(info.ref.name, tuple(site), output))
        return info

    def lowered(
        self,
        program: Program,
        *,
        inputs: Sequence[str | None],
        params: Sequence[tuple[str, str]],
        outputs: Sequence[str | None],
        constants: Sequence[tuple[str, str]] = (),
        mutated: Sequence[str] = (),
        renamed: Mapping[str, str] | None = None,
        constant_values: Sequence[tuple[str, np.ndarray]] = (),
        cond_regions: Sequence[CondRegion] = (),
    ) -> LoweredProgram:
        """The result of the walk, for ``program`` (the built program, possibly edited).

        ``renamed`` maps tensors the driver renamed after the walk (temps that became
        outputs); uncovered values and kept-alive tensors the program no longer
        declares are dropped.
        """
        declared = {t.name for t in program.tensors}
        rename = renamed or {}
        keep = (rename.get(n, n) for n in self.coverage.keep_alive)
        return LoweredProgram(
            program=program,
            inputs=tuple(inputs),
            params=tuple(params),
            outputs=tuple(outputs),
            constants=tuple(constants),
            uncovered_values=tuple(v for v in self.uncovered if v.name in declared),
            coverage=self.coverage.report(),
            keep_alive=tuple(dict.fromkeys(n for n in keep if n in declared)),
            ops_seen=self.coverage.seen,
            ops_lowered=self.coverage.lowered,
            mutated=tuple(mutated),
            notes=tuple(self.notes),
            constant_values=tuple(constant_values),
            cond_regions=tuple(cond_regions),
            module_paths=tuple(sorted(self.module_paths)),
            kernel_sources=tuple(sorted(self.pb.kernel_sources.items())),
        )
