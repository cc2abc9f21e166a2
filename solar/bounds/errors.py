"""Errors of bound evaluation (codes E0450-E0459).

Contract: a leaf of `solar.bounds`; every bound error is a `BoundError`, a
configuration error (exit code 2, like a bad hardware spec) but not a
`solar.diagnostics.HardwareSpecError`: the spec may be fine, the request is not.

* ``E0450`` unknown bound model (the message lists the valid ones);
* ``E0451`` unknown precision policy;
* ``E0452`` the hardware spec has no peak usable for some work;
* ``E0453`` invalid inverse-roofline target time (not positive and finite);
* ``E0454`` unknown cache state;
* ``E0455`` a count or a bound is too large for a 64-bit float (sizes so large that the
  FLOPs or bytes pass 1.8e308); an input fault, exit 1 (`CountOverflowError`).
"""

from __future__ import annotations

from solar.diagnostics import SolarError

__all__ = ["BoundError", "CountOverflowError"]


class BoundError(SolarError):
    """A bound cannot be evaluated as asked."""

    default_code = "E0450"
    exit_code = 2


class CountOverflowError(SolarError):
    """A count or bound of the program overflows a 64-bit float at these sizes (E0455).

    The sizes are the input's (``--set``, the IR's ``size`` lines), so this is exit 1.
    A bound is never printed as ``inf`` or ``nan``.
    """

    default_code = "E0455"
