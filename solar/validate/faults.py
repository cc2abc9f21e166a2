"""Execution faults: `ExecutionError`/`ResourceError` with the statement and the point.

Contract: every fault the executor reports goes through `raise_fault`, which names the
statement (`print_stmt`), carries its span, and, when given a boolean array of
offending points, the first such iteration point (loop variable values).

Codes (stable; listed in docs/validation.md):

=====  ===========================================================================
E0301  subscript out of bounds at an executed iteration point
E0302  read (or reduction into) an element that was never written
E0303  integer division or modulo by zero
E0304  a required input/param is missing, unknown, or has the wrong shape/dtype kind
E0305  memory budget exceeded (raised as `ResourceError`)
E0306  an output element is never written
E0307  invalid value operation (integer to a negative power, float subscript, ...)
E0308  time budget exceeded (raised as `ResourceError`)
E0309  the program is not executable as written (unknown name or tensor, step < 1)
=====  ===========================================================================
"""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from solar.diagnostics import ExecutionError, ResourceError, Span
from solar.ir import Stmt, print_stmt
from solar.validate.grids import Domain

__all__ = ["describe_point", "raise_fault", "raise_resource"]


def _first_line(stmt: Stmt) -> str:
    return print_stmt(stmt).strip().split("\n", 1)[0]


def describe_point(domain: Domain, bad: np.ndarray | bool) -> str:
    """``i=3, j=5`` for the first True point of ``bad`` (broadcast over ``domain``)."""
    arr = np.asarray(bad)
    point: dict[str, int] = {}
    if arr.ndim and domain.axes:
        full = np.broadcast_to(arr, np.broadcast_shapes(arr.shape, domain.shape))
        coords = np.unravel_index(int(np.argmax(full)), full.shape)
        point = domain.point([int(c) for c in coords])
    point.update(domain.scalars)
    return ", ".join(f"{k}={v}" for k, v in point.items())


def raise_fault(
    code: str,
    what: str,
    stmt: Stmt,
    *,
    domain: Domain | None = None,
    bad: np.ndarray | bool | None = None,
    span: Span | None = None,
) -> NoReturn:
    """Raise an `ExecutionError` for ``stmt``.

    Args:
        code: the E03xx code.
        what: what went wrong (one sentence, no trailing period).
        stmt: the statement being executed.
        domain: the iteration domain, to locate the first offending point.
        bad: a boolean array over ``domain`` marking offending points.
        span: the span to point at (default: the statement's).

    Raises:
        ExecutionError: always.
    """
    where = ""
    if domain is not None and bad is not None:
        point = describe_point(domain, bad)
        if point:
            where = f" at {point}"
    message = f"{what}{where} in `{_first_line(stmt)}`"
    raise ExecutionError(message, code=code, span=span or stmt.span)


def raise_resource(code: str, message: str, *, span: Span | None = None) -> NoReturn:
    """Raise a `ResourceError` (memory or time budget)."""
    raise ResourceError(message, code=code, span=span)
