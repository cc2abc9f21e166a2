"""Test-time sizes for the samples that default to realistic sizes.

The samples default to realistic sizes (issue 16: a new user's first command should not
print nanoseconds), where a real reference run and the IR executor are slow; tests that
execute them, or check numbers computed at their sizes, rebind them to these small sizes
(the sizes they had before), so goldens and CI time stay as they were. `overrides`
returns ``None`` for a model sample that is small already. Hand-written IR samples
(samples/ir/*.alir) are rebound by rewriting their ``size NAME = INT`` lines
(`small_ir_text`, `small_ir_path`): derived sizes (``size C = G * Cg``) follow.
"""

from __future__ import annotations

import re
import tempfile
from functools import cache
from pathlib import Path

IR_SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "ir"

SMALL_SIZES: dict[str, dict[str, int]] = {
    "gpt_block": {"BATCH": 2, "SEQ": 8, "D_MODEL": 32, "HEADS": 4},
    "resnet_block": {"BATCH": 2, "C_IN": 4, "C_OUT": 8, "SIZE": 8},
    "flax_transformer_block": {"BATCH": 2, "SEQ": 16, "DIM": 32, "HEADS": 4},
    "flax_mlp": {"BATCH": 8, "IN": 32, "HIDDEN": 64, "CLASSES": 10},
    "mha": {"BATCH": 2, "SEQ": 6, "KV_SEQ": 4, "EMBED": 16, "HEADS": 4},
    "sdpa": {"BATCH": 2, "HEADS": 3, "SEQ": 8, "HEAD_DIM": 16},
    "transformer_encoder": {"BATCH": 2, "SEQ": 6, "D_MODEL": 16, "HEADS": 4, "FFN": 32},
    "mobilenet_block": {"BATCH": 2, "CHANNELS": 8, "SIZE": 10},
    "vgg_small": {"BATCH": 2, "SIZE": 16, "CLASSES": 10},
    "unet_small": {"BATCH": 1, "SIZE": 16},
}


def overrides(stem: str) -> dict[str, int] | None:
    """The small sizes of sample ``stem``, or ``None`` when it is small already."""
    return SMALL_SIZES.get(stem)


def set_args(stem: str) -> list[str]:
    """``--set NAME=VALUE`` arguments for the small sizes of sample ``stem``."""
    return [a for k, v in (SMALL_SIZES.get(stem) or {}).items() for a in ("--set", f"{k}={v}")]


SMALL_IR_SIZES: dict[str, dict[str, int]] = {
    # attention keeps Dh = 64: its scale is the literal 1 / sqrt(64)
    "attention": {"B": 2, "Hh": 2, "L": 16, "Dh": 64},
    "attention_causal": {"B": 2, "Hh": 2, "L": 16, "Dh": 64},
    "avgpool2d": {"N": 2, "C": 3, "H": 9, "W": 9},
    "batched_matmul": {"Bt": 4, "M": 16, "N": 8, "K": 12},
    "batchnorm": {"N": 4, "C": 3, "H": 6, "W": 6},
    "conv2d": {"N": 2, "G": 2, "Cg": 2, "Fg": 3, "H": 12, "W": 12},
    "cumsum": {"B": 4, "N": 32},
    "depthwise_conv2d": {"N": 2, "C": 8, "H": 10, "W": 10},
    "embedding": {"B": 2, "S": 8, "V": 50, "D": 16},
    "layernorm": {"B": 16, "D": 32},
    "linear_bias_gelu": {"M": 16, "N": 32, "K": 24},
    "lstm_cell": {"T": 6, "B": 2, "I": 8, "Hd": 12},
    "matmul": {"M": 32, "N": 24, "K": 16},
    "maxpool2d": {"N": 2, "C": 3, "H": 9, "W": 9},
    "mse_loss": {"B": 8, "N": 16},
    "pixel_shuffle": {"N": 2, "C": 3, "H": 5, "W": 4},
    "reshape_permute": {"B": 2, "S": 6, "Hh": 4},
    "rmsnorm": {"B": 16, "D": 32},
    "softmax": {"B": 8, "N": 32},
    "transformer_block": {"B": 2, "T": 8, "H": 4, "Dh": 8},
    "triangular_matmul": {"N": 24, "M": 16},
}


def small_ir_text(path: Path | str) -> str:
    """The text of IR sample ``path`` with its sizes rebound to the small test sizes."""
    path = Path(path)
    small = SMALL_IR_SIZES.get(path.stem, {})

    def rebind(m: re.Match[str]) -> str:
        name = m.group(1)
        return f"size {name} = {small[name]}" if name in small else m.group(0)

    return re.sub(r"^size (\w+) = \d+$", rebind, path.read_text(encoding="utf-8"), flags=re.M)


@cache
def _small_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="solar_small_ir_"))


def small_ir_path(name: str) -> Path:
    """A copy of ``samples/ir/<name>.alir`` at the small test sizes (same file name)."""
    target = _small_dir() / f"{name}.alir"
    if not target.exists():
        target.write_text(small_ir_text(IR_SAMPLES / f"{name}.alir"), encoding="utf-8")
    return target
