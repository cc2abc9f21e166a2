"""Numbers as the reports show them: times with an adaptive unit, FLOPs and bytes with
an SI prefix (a leaf: every renderer imports it, it imports none)."""

from __future__ import annotations

__all__ = ["format_bytes", "format_count", "format_flops", "format_time"]


def format_time(seconds: float) -> str:
    """Seconds with an adaptive unit.

    >>> format_time(2.05e-3)
    '2.050 ms'
    >>> format_time(9.76e280)
    '9.760e+280 s'
    >>> format_time(4.1e-11), format_time(0.0)  # a share of a bound never shows as 0.0
    ('0.041 ns', '0.0 ns')
    """
    if seconds >= 1e6:  # 11.6 days: digits past this say nothing
        return f"{seconds:.3e} s"
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3f} µs"
    if 0 < seconds < 5e-11:
        return f"{seconds * 1e9:.2g} ns"
    return f"{seconds * 1e9:.1f} ns"


def _scaled(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_flops(value: float) -> str:
    """FLOPs with an SI prefix.

    >>> format_flops(1.37e11)
    '137 GFLOP'
    """
    return _scaled(value, "FLOP")


def format_bytes(value: float) -> str:
    """Bytes with an SI prefix (powers of 10, as bandwidths are quoted)."""
    return _scaled(value, "B")


def format_count(value: float) -> str:
    """A count with an SI prefix.

    >>> format_count(25_557_032), format_count(12)
    ('25.6 M', '12')
    """
    return _scaled(value, "").rstrip() if value >= 1e3 else f"{value:.0f}"
