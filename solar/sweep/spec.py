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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, get_args

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

    def __post_init__(self) -> None:
        names = [n for n, _ in self.axes]
        if len(set(names)) != len(names):
            raise UsageError(f"a size is swept twice: {', '.join(names)}", code="E0933")
        if not self.archs or not self.precisions:
            raise UsageError("a sweep needs at least one --arch and --precision", code="E0933")
        count = 1
        for _name, values in self.axes:
            count *= len(values)
        if count > MAX_POINTS:
            raise UsageError(
                f"{count:,} size bindings (at most {MAX_POINTS:,}); split the sweep", code="E0934"
            )

    @property
    def size_names(self) -> tuple[str, ...]:
        """The swept sizes, in order."""
        return tuple(n for n, _ in self.axes)


def parse_values(text: str) -> tuple[int, ...]:
    """``1,8,64`` or ``512..4096:512`` (inclusive) as positive integers, in order.

    Raises:
        UsageError: E0933.

    >>> parse_values("1,8,64")
    (1, 8, 64)
    >>> parse_values("512..2048:512")
    (512, 1024, 1536, 2048)
    """
    out: list[int] = []
    try:
        for part in (p.strip() for p in text.split(",")):
            if ".." in part:
                lo, _, rest = part.partition("..")
                hi, _, step = rest.partition(":")
                if int(step or 1) <= 0:
                    raise ValueError(part)
                out.extend(range(int(lo), int(hi) + 1, int(step or 1)))
            else:
                out.append(int(part))
    except ValueError:
        raise UsageError(
            f"sweep values must be integers, `a,b,c` or `lo..hi:step`; got `{text}`",
            code="E0933",
        ) from None
    if not out or min(out) <= 0:
        raise UsageError(f"sweep values must be positive integers, got `{text}`", code="E0933")
    return tuple(dict.fromkeys(out))


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
    if isinstance(raw, bool):
        raise UsageError(f"sweep file: `{name}` must list integers", code="E0933")
    if isinstance(raw, int):
        return parse_values(str(raw))
    if isinstance(raw, str):
        return parse_values(raw)
    if isinstance(raw, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in raw):
        return parse_values(",".join(str(v) for v in raw))
    if isinstance(raw, dict) and set(raw) <= {"from", "to", "step"} and {"from", "to"} <= set(raw):
        step = raw.get("step", 1)
        return parse_values(f"{raw['from']}..{raw['to']}:{step}")
    raise UsageError(
        f"sweep file: `{name}` must be a list of integers, `a,b`, `lo..hi:step` or "
        "{from, to, step}",
        code="E0933",
    )


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
    if not items or not all(isinstance(v, str) for v in items):
        raise UsageError(f"sweep file: `{key}` must be a name or a list of names", code="E0933")
    return tuple(str(v) for v in items)


_KEYS: Final = frozenset(
    {"model", "arch", "set", "precision", "cache", "frontend", "validate", "time_budget_s",
     "entry"}
)  # fmt: skip


def load_sweep_file(path: Path) -> dict[str, object]:
    """A YAML sweep file as `SweepSpec` keyword arguments (``model`` relative to it).

    Raises:
        UsageError: E0901/E0902 unreadable; E0933 not a valid sweep file.
    """
    import yaml

    from solar.files import read_text

    try:
        data = yaml.safe_load(read_text(path))
    except yaml.YAMLError as err:
        raise UsageError(f"sweep file {path} is not valid YAML: {err}", code="E0933") from None
    if not isinstance(data, dict) or "model" not in data or not set(data) <= _KEYS:
        unknown = sorted(set(data) - _KEYS) if isinstance(data, dict) else []
        raise UsageError(
            f"sweep file {path} needs `model:` and only the keys {', '.join(sorted(_KEYS))}"
            + (f" (unknown: {', '.join(map(str, unknown))})" if unknown else ""),
            code="E0933",
        )
    out: dict[str, object] = {"model": path.parent / str(data["model"])}
    axes = data.get("set") or {}
    if not isinstance(axes, dict):
        raise UsageError("sweep file: `set` must map size names to values", code="E0933")
    out["axes"] = tuple((str(k), _axis_values(str(k), v)) for k, v in axes.items())
    if "arch" in data:
        out["archs"] = _strings(data["arch"], "arch")
    if "precision" in data:
        out["precisions"] = load_precisions(",".join(_strings(data["precision"], "precision")))
    for key in ("cache", "frontend", "validate", "entry"):
        if key in data:
            out[key] = _strings(data[key], key)[0]
    if "time_budget_s" in data:
        out["time_budget_s"] = float(data["time_budget_s"])
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
