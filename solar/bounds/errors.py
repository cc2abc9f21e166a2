"""Errors of bound evaluation (codes E0450-E0459).

Contract: a leaf of `solar.bounds`; every bound error is a `BoundError`, a
`solar.diagnostics.HardwareSpecError` (configuration: exit code 2):

* ``E0450`` unknown bound model (the message lists the valid ones);
* ``E0451`` unknown precision policy;
* ``E0452`` the hardware spec has no peak usable for some work;
* ``E0453`` invalid inverse-roofline target time (not positive and finite).
"""

from __future__ import annotations

from solar.diagnostics import HardwareSpecError

__all__ = ["BoundError"]


class BoundError(HardwareSpecError):
    """A bound cannot be evaluated as asked."""

    default_code = "E0450"
