"""Coverage: which ops a lowering could not express, and what they weigh.

Contract: `CoverageLog` is the mutable record a driver keeps while it walks a program;
`CoverageLog.report` freezes it into `UncoveredOp` rows. The policy it serves (see the
brief's "unsupported is never zero"): an uncovered op is never dropped. Its outputs
become program inputs (their real values come from the reference run), its share of the
program's tensor bytes is reported, and the tensors it reads are kept alive, so the work
feeding it is still charged by the bounds (`keep_alive`; dead-code elimination must
keep them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["CoverageLog", "UncoveredOp"]


@dataclass(frozen=True, slots=True)
class UncoveredOp:
    """An op (ATen target, jaxpr primitive) the program uses but the IR does not cover.

    Attributes:
        target: the op name.
        count: number of calls/equations.
        bytes_share: share of the program's tensor bytes (inputs+outputs of these ops over
            those of every op), in ``[0, 1]``.
        reason: why it is uncovered (no lowering, unsupported variant...).
        counted_flops: FLOPs an independent counter (torch's ``FlopCounterMode``)
            assigns to these calls; ``None`` when the frontend has no such counter or
            it knows none of them.
    """

    target: str
    count: int
    bytes_share: float
    reason: str = "no lowering"
    counted_flops: int | None = None


@dataclass(slots=True)
class CoverageLog:
    """What a driver records per op: bytes seen, uncovered ops, values they read."""

    total_bytes: int = 0
    lowered: int = 0
    seen: int = 0
    keep_alive: list[str] = field(default_factory=list)
    _uncovered: dict[str, list[tuple[int, str, int | None]]] = field(default_factory=dict)

    def count(self, nbytes: int) -> None:
        """One more op of ``nbytes`` input+output bytes."""
        self.seen += 1
        self.total_bytes += nbytes

    def uncover(
        self,
        target: str,
        nbytes: int,
        reason: str,
        reads: Iterable[str],
        counted_flops: int | None = None,
    ) -> None:
        """Record an uncovered op and keep the tensors it reads alive."""
        self._uncovered.setdefault(target, []).append((nbytes, reason, counted_flops))
        for name in reads:
            if name not in self.keep_alive:
                self.keep_alive.append(name)

    def report(self) -> tuple[UncoveredOp, ...]:
        """The uncovered ops, most bytes first (then by name).

        >>> log = CoverageLog()
        >>> log.count(30); log.count(10)
        >>> log.uncover("sort", 10, "no lowering", ["x0"], counted_flops=7)
        >>> log.report()[0]
        UncoveredOp(target='sort', count=1, bytes_share=0.25, reason='no lowering', counted_flops=7)
        >>> log.keep_alive
        ['x0']
        """
        total = max(self.total_bytes, 1)
        ops = [
            UncoveredOp(
                target,
                len(items),
                sum(b for b, _, _ in items) / total,
                items[0][1],
                _sum_known(f for _, _, f in items),
            )
            for target, items in self._uncovered.items()
        ]
        ops.sort(key=lambda u: (-u.bytes_share, u.target))
        return tuple(ops)


def _sum_known(values: Iterable[int | None]) -> int | None:
    """The sum of the known values, ``None`` when none is known.

    >>> _sum_known([None, 2, 3]), _sum_known([None])
    (5, None)
    """
    known = [v for v in values if v is not None]
    return sum(known) if known else None
