"""What a sweep covers: one model file × architectures × size bindings × precision policies.

Contract: `SweepSpec` (frozen) from the command line (`parse_axis`) or a YAML sweep
file (`load_sweep_file`); `sweep_points(spec)` is its Cartesian product of size
bindings, in a fixed order (the first axis varies slowest). Precision policies and
architectures are not points: every point is bounded under each of them (they cost
one evaluation each, never a capture).

A sweep file (YAML)::

    model: samples/ir/transformer_block.alir   # relative to the sweep file
    arch: [H100_SXM, B200]
    set:
      B: [1, 8, 64]
      T: {from: 512, to: 4096, step: 512}   # inclusive
    precision: [default, bf16]
    validate: auto        # optional: frontend, cache, entry, time_budget_s too

Error codes: E0933 a malformed axis, value or sweep file; E0934 more than
`MAX_POINTS` size bindings.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeGuard, get_args

from solar.diagnostics import UsageError
from solar.options import (
    DEFAULT_ARCH,
    CacheState,
    FrontendChoice,
    PrecisionPolicy,
    ValidateMode,
)

__all__ = [
    "MAX_POINTS",
    "MAX_SIZE",
    "SweepSpec",
    "load_precisions",
    "load_sweep_file",
    "parse_axis",
    "parse_values",
    "sweep_points",
]

MAX_POINTS: Final = 1_000_000
_PRECISIONS: Final = get_args(PrecisionPolicy)


@dataclass(frozen=True, slots=True)
class SweepSpec:
    """A sweep over one model file.

    Attributes:
        model: the model (``.py``) or IR (``.alir``) file.
        axes: ``(size name, values)`` per swept size, in sweep order.
        archs: hardware specs; one row per point, precision and arch.
        precisions: precision policies; every point is bounded under each.
        cache, frontend, validate, time_budget_s, entry: as `solar analyze`.
        entry_args, inputs_file, input_shapes: as `solar analyze` (`solar.cli.inputs`;
            ``entry_args`` as JSON, ``input_shapes`` as ``--input-shape`` texts).
    """

    model: Path
    axes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    archs: tuple[str, ...] = (DEFAULT_ARCH,)
    precisions: tuple[PrecisionPolicy, ...] = ("default",)
    cache: CacheState = "warm"
    frontend: FrontendChoice = "auto"
    validate: ValidateMode = "auto"
    time_budget_s: float = 60.0
    entry: str | None = None
    entry_args: str | None = None
    inputs_file: Path | None = None
    input_shapes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = [n for n, _ in self.axes]
        if len(set(names)) != len(names):
            raise UsageError(f"a size is swept twice: {', '.join(names)}", code="E0933")
        if not self.archs or not self.precisions:
            raise UsageError("a sweep needs at least one --arch and --precision", code="E0933")
        count = math.prod(len(values) for _, values in self.axes)
        if count > MAX_POINTS:
            raise UsageError(
                f"{count:,} size bindings (at most {MAX_POINTS:,}); split the sweep", code="E0934"
            )

    @property
    def size_names(self) -> tuple[str, ...]:
        """The swept sizes, in order."""
        return tuple(n for n, _ in self.axes)


MAX_SIZE: Final = 2**63 - 1
"""The largest size value a sweep takes (a 64-bit size, as the IR's)."""


def parse_values(text: str) -> tuple[int, ...]:
    """``1,8,64`` or ``512..4096:512`` (inclusive) as positive integers, in order.

    The number of values is counted before any range is built, so ``1..1000000000`` is
    refused (E0934) without allocating it.

    Raises:
        UsageError: E0933 not such a list, or a value out of ``[1, 2**63)``; E0934 more
            than `MAX_POINTS` values.

    >>> parse_values("1,8,64")
    (1, 8, 64)
    >>> parse_values("512..2048:512")
    (512, 1024, 1536, 2048)
    """
    parts: list[tuple[int, int, int]] = []  # (lo, hi, step) per part
    try:
        for part in (p.strip() for p in text.split(",")):
            if ".." in part:
                lo, _, rest = part.partition("..")
                hi, _, step = rest.partition(":")
                parts.append((_integer(lo), _integer(hi), _integer(step or "1")))
            else:
                parts.append((_integer(part), _integer(part), 1))
    except ValueError:
        raise UsageError(
            f"sweep values must be integers, `a,b,c` or `lo..hi:step`; got `{text[:80]}`",
            code="E0933",
        ) from None
    if any(lo <= 0 or step <= 0 or hi > MAX_SIZE for lo, hi, step in parts):
        raise UsageError(
            f"sweep values must be positive integers below 2**63 (and steps positive), "
            f"got `{text[:80]}`",
            code="E0933",
        )
    count = sum(max(0, (hi - lo) // step + 1) for lo, hi, step in parts)
    if count > MAX_POINTS:
        raise UsageError(
            f"`{text[:80]}` is {count:,} values (at most {MAX_POINTS:,}); split the sweep",
            code="E0934",
        )
    out = [v for lo, hi, step in parts for v in range(lo, hi + 1, step)]
    if not out:
        raise UsageError(f"no sweep values in `{text[:80]}`", code="E0933")
    return tuple(dict.fromkeys(out))


def _integer(text: str) -> int:
    """A decimal integer of at most 20 digits (a 5000-digit one is refused, not parsed).

    Raises:
        ValueError: anything else.
    """
    text = text.strip()
    if not text.lstrip("+-").isdigit() or len(text) > 20:
        raise ValueError(text[:40])
    return int(text)


def parse_axis(text: str) -> tuple[str, tuple[int, ...]]:
    """``--set NAME=VALUES`` as ``(NAME, values)`` (`parse_values`).

    Raises:
        UsageError: E0933.
    """
    name, sep, values = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise UsageError(f"--set expects NAME=VALUES, got `{text}`", code="E0933")
    return name.strip(), parse_values(values)


def _axis_values(name: str, raw: object) -> tuple[int, ...]:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return parse_values(str(raw))
    if isinstance(raw, str):
        return parse_values(raw)
    if isinstance(raw, list) and raw and all(_is_int(v) for v in raw):
        return parse_values(",".join(str(v) for v in raw))
    if (
        isinstance(raw, dict)
        and set(raw) <= {"from", "to", "step"}
        and {"from", "to"} <= set(raw)
        and all(_is_int(v) for v in raw.values())
    ):
        step = raw.get("step", 1)
        return parse_values(f"{raw['from']}..{raw['to']}:{step}")
    raise UsageError(
        f"sweep file: `{name}` must be a list of integers, `a,b`, `lo..hi:step` or "
        "{from, to, step}",
        code="E0933",
    )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def load_precisions(text: str) -> tuple[PrecisionPolicy, ...]:
    """``default,bf16`` as precision policies.

    Raises:
        UsageError: E0933 an unknown policy.
    """
    out: list[PrecisionPolicy] = []
    for part in (p.strip() for p in text.split(",")):
        match = next((p for p in _PRECISIONS if p == part), None)
        if match is None:
            raise UsageError(
                f"unknown precision `{part}`; valid: {', '.join(_PRECISIONS)}", code="E0933"
            )
        out.append(match)
    return tuple(dict.fromkeys(out))


def _strings(value: object, key: str) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) and v.strip() for v in items):
        raise UsageError(f"sweep file: `{key}` must be a name or a list of names", code="E0933")
    return tuple(str(v) for v in items)


def _choice(value: object, key: str, choices: tuple[str, ...]) -> str:
    """A sweep file's option, checked against the CLI option's choices."""
    if not isinstance(value, str) or value not in choices:
        raise UsageError(
            f"sweep file: `{key}: {str(value)[:40]}` is not one of {', '.join(choices)}",
            code="E0933",
        )
    return value


def _positive_seconds(value: object, key: str) -> float:
    """A sweep file's time option, as the CLI checks one (`check_positive`)."""
    if not (_is_int(value) or isinstance(value, float)):
        raise UsageError(f"sweep file: `{key}` must be a number of seconds", code="E0933")
    seconds = float(value)
    if not 0.0 < seconds < math.inf:
        raise UsageError(f"sweep file: `{key}` must be positive, got {seconds:g}", code="E0933")
    return seconds


_KEYS: Final = frozenset(
    {"model", "arch", "set", "precision", "cache", "frontend", "validate", "time_budget_s",
     "entry"}
)  # fmt: skip
_CHOICES: Final = {
    "cache": get_args(CacheState),
    "frontend": get_args(FrontendChoice),
    "validate": get_args(ValidateMode),
}


def load_sweep_file(path: Path) -> dict[str, object]:
    """A YAML sweep file as `SweepSpec` keyword arguments (``model`` relative to it).

    Every value gets the checks the CLI gives its option (types, choices, ranges).

    Raises:
        UsageError: E0901/E0902 unreadable; E0933 not a valid sweep file; E0934 too many
            points.
    """
    from solar.files import DataError, parse_data, read_text

    try:
        data = parse_data(read_text(path), fmt="yaml")
    except DataError as err:
        raise UsageError(f"sweep file {path} is not valid YAML: {err}", code="E0933") from None
    if not isinstance(data, dict) or "model" not in data or not set(data) <= _KEYS:
        unknown = sorted(map(str, set(data) - _KEYS)) if isinstance(data, dict) else []
        raise UsageError(
            f"sweep file {path} needs `model:` and only the keys {', '.join(sorted(_KEYS))}"
            + (f" (unknown: {', '.join(u[:40] for u in unknown[:5])})" if unknown else ""),
            code="E0933",
        )
    out: dict[str, object] = {"model": path.parent / _strings(data["model"], "model")[0]}
    axes = data.get("set") or {}
    if not isinstance(axes, dict) or not all(
        isinstance(k, str) and k.isidentifier() for k in axes
    ):
        raise UsageError("sweep file: `set` must map size names to values", code="E0933")
    out["axes"] = tuple((k, _axis_values(k, v)) for k, v in axes.items())
    if "arch" in data:
        out["archs"] = _strings(data["arch"], "arch")
    if "precision" in data:
        out["precisions"] = load_precisions(",".join(_strings(data["precision"], "precision")))
    for key, choices in _CHOICES.items():
        if key in data:
            out[key] = _choice(data[key], key, choices)
    if "entry" in data:
        out["entry"] = _strings(data["entry"], "entry")[0]
    if "time_budget_s" in data:
        out["time_budget_s"] = _positive_seconds(data["time_budget_s"], "time_budget_s")
    return out


def sweep_points(spec: SweepSpec) -> tuple[dict[str, int], ...]:
    """Every size binding of the sweep (the first axis varies slowest).

    >>> s = SweepSpec(Path("m.alir"), axes=(("B", (1, 2)), ("T", (8, 16))))
    >>> sweep_points(s)
    ({'B': 1, 'T': 8}, {'B': 1, 'T': 16}, {'B': 2, 'T': 8}, {'B': 2, 'T': 16})
    """
    names = spec.size_names
    values: Sequence[tuple[int, ...]] = [v for _, v in spec.axes]
    return tuple(dict(zip(names, combo, strict=True)) for combo in itertools.product(*values))
