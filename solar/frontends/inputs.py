"""Inputs given on the command line: ``--input-shape [NAME=]D0,D1,...[:DTYPE]``.

Contract: text -> `InputShape` (frozen, no torch); the PyTorch loader turns each into a
seeded random tensor (`solar.frontends.pytorch.loader`). Unnamed shapes are positional
inputs in the order given; named ones are keyword inputs. Floating inputs are drawn
from a standard normal, integer ones uniformly from ``[0, high)`` (``high`` 2 unless the
spec says ``:i64<100``, for token ids below a vocabulary size), booleans are ``True``.

Error codes: E0912 a malformed ``--input-shape`` (usage, exit 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

from solar.diagnostics import UsageError

__all__ = ["InputDType", "InputShape", "parse_input_shape"]

InputDType: TypeAlias = Literal["f64", "f32", "f16", "bf16", "i64", "i32", "i8", "bool"]
_DTYPES: tuple[InputDType, ...] = ("f64", "f32", "f16", "bf16", "i64", "i32", "i8", "bool")

_SPEC = re.compile(
    r"^(?:(?P<name>[A-Za-z_]\w*)=)?(?P<dims>\d+(?:,\d+)*|)(?::(?P<dtype>\w+)(?:<(?P<high>\d+))?)?$"
)


@dataclass(frozen=True, slots=True)
class InputShape:
    """One input described by its shape.

    Attributes:
        name: the keyword it is passed as (``None``: positional).
        shape: its dims (``()`` for a 0-d tensor).
        dtype: its element type.
        high: integer inputs are drawn from ``[0, high)``.
    """

    name: str | None
    shape: tuple[int, ...]
    dtype: InputDType = "f32"
    high: int = 2


def parse_input_shape(text: str) -> InputShape:
    """Parse ``[NAME=]D0,D1,...[:DTYPE[<HIGH]]``.

    >>> parse_input_shape("x=2,3,224,224:f32")
    InputShape(name='x', shape=(2, 3, 224, 224), dtype='f32', high=2)
    >>> parse_input_shape("1,16:i64<128")
    InputShape(name=None, shape=(1, 16), dtype='i64', high=128)

    Raises:
        UsageError: E0912 for anything else.
    """
    m = _SPEC.match(text.strip().replace(" ", ""))
    dtype = (m.group("dtype") if m else None) or "f32"
    numbers = re.findall(r"\d+", text)
    if any(len(n) > 18 for n in numbers):  # over 10**18: no tensor has such a dim
        raise UsageError(
            f"bad --input-shape `{text[:60]}`: a number of {max(map(len, numbers))} digits",
            code="E0912",
            notes=("dims and bounds are at most 18 digits",),
        )
    if m is None or dtype not in _DTYPES:
        raise UsageError(
            f"bad --input-shape `{text[:60]}`",
            code="E0912",
            notes=(
                "write [NAME=]D0,D1,...[:DTYPE], e.g. x=2,3,224,224:f32 or ids=1,16:i64<1000",
                f"dtypes: {', '.join(_DTYPES)}",
            ),
        )
    dims = tuple(int(d) for d in m.group("dims").split(",")) if m.group("dims") else ()
    high = int(m.group("high")) if m.group("high") else 2
    return InputShape(m.group("name"), dims, dtype, max(high, 1))
