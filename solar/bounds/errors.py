"""Errors of bound evaluation (codes E0450-E0459).

Contract: a leaf of `solar.bounds`; every bound error is a `BoundError`, a
configuration error (exit code 2, like a bad hardware spec) but not a
`solar.diagnostics.HardwareSpecError`: the spec may be fine, the request is not.

* ``E0450`` unknown bound model (the message lists the valid ones);
* ``E0451`` unknown precision policy;
* ``E0452`` the hardware spec has no peak usable for some work;
* ``E0453`` invalid inverse-roofline target time (not positive and finite);
* ``E0454`` unknown cache state.
"""

from __future__ import annotations

from solar.diagnostics import SolarError

__all__ = ["BoundError"]


class BoundError(SolarError):
    """A bound cannot be evaluated as asked."""

    default_code = "E0450"
    exit_code = 2
