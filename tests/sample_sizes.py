"""Test-time sizes for the samples that default to realistic sizes.

The flagship samples (README tour, ``make demo``) default to realistic sizes, where a
real reference run and the IR executor are slow; tests that execute them at their
file sizes rebind them to these small sizes (the sizes they had before), so goldens and
CI time stay as they were. `overrides` returns ``None`` for every other sample.
"""

from __future__ import annotations

SMALL_SIZES: dict[str, dict[str, int]] = {
    "gpt_block": {"BATCH": 2, "SEQ": 8, "D_MODEL": 32, "HEADS": 4},
    "resnet_block": {"BATCH": 2, "C_IN": 4, "C_OUT": 8, "SIZE": 8},
    "flax_transformer_block": {"BATCH": 2, "SEQ": 16, "DIM": 32, "HEADS": 4},
    "flax_mlp": {"BATCH": 8, "IN": 32, "HIDDEN": 64, "CLASSES": 10},
}


def overrides(stem: str) -> dict[str, int] | None:
    """The small sizes of sample ``stem``, or ``None`` when it is small already."""
    return SMALL_SIZES.get(stem)


def set_args(stem: str) -> list[str]:
    """``--set NAME=VALUE`` arguments for the small sizes of sample ``stem``."""
    return [a for k, v in (SMALL_SIZES.get(stem) or {}).items() for a in ("--set", f"{k}={v}")]
