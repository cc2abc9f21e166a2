"""Hypothesis properties: model orderings and monotonicity of every bound."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sample_sizes import small_ir_text

from solar.bounds import BOUND_MODELS, PRECISION_POLICIES, compute_bounds
from solar.einsum import EinsumGraph, lift_to_einsum
from solar.hw import HardwareSpec, list_hardware_specs
from solar.ir import IntLit, parse_program

from .conftest import ADD, LINEAR_GELU, SOFTMAX, h100, matmul_text

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_NAMES = sorted(p.stem for p in (ROOT / "samples" / "ir").glob("*.alir"))
REL = 1e-9


@functools.cache
def _graph(name: str) -> EinsumGraph:
    inline = {"add": ADD, "linear_gelu": LINEAR_GELU, "softmax_big": SOFTMAX,
              "mm": matmul_text()}
    text = inline.get(name) or small_ir_text(ROOT / "samples" / "ir" / f"{name}.alir")
    return lift_to_einsum(parse_program(text))


@functools.cache
def _specs() -> tuple[HardwareSpec, ...]:
    return (h100(), *list_hardware_specs())


PROGRAMS = st.sampled_from([*SAMPLE_NAMES, "add", "linear_gelu", "softmax_big", "mm"])
POLICIES = st.sampled_from(PRECISION_POLICIES)


@st.composite
def _sizes(draw: st.DrawFn, name: str) -> dict[str, int]:
    program = _graph(name).program
    out = {}
    for decl in program.sizes:
        if isinstance(decl.value, IntLit) and draw(st.booleans()):
            base = decl.value.value
            out[decl.name] = max(1, min(base * draw(st.integers(1, 3)), base + 64)
                                 if base < 1024 else base // draw(st.integers(1, 4)))
    return out


def _bounds(g: EinsumGraph, spec: HardwareSpec, policy: str,
            sizes: dict[str, int], cache: str = "cold") -> dict[str, float]:
    return {m: compute_bounds(g, spec, model=m, precision_policy=policy,  # type: ignore[arg-type]
                              sizes=sizes, cache=cache).time_s for m in BOUND_MODELS}  # type: ignore[arg-type]


@given(st.data(), PROGRAMS, POLICIES, st.integers(0, 100))
def test_fused_is_the_smallest(data: st.DataObject, name: str, policy: str, si: int) -> None:
    spec = _specs()[si % len(_specs())]
    sizes = data.draw(_sizes(name))
    cold = _bounds(_graph(name), spec, policy, sizes)
    assert all(v > 0 for v in cold.values())
    warm = _bounds(_graph(name), spec, policy, sizes, "warm")
    for t in (cold, warm):
        assert t["fused"] <= t["cache-aware"] * (1 + REL)
        assert t["fused"] <= t["unfused"] * (1 + REL)
    # a warm start can only help
    assert all(warm[m] <= cold[m] * (1 + REL) for m in cold)


SPEC_FIELDS = ["peak", "vector", "dram_bandwidth_bytes_per_s", "l2_bandwidth_bytes_per_s",
               "l2_capacity_bytes", "smem_per_sm_bytes", "register_file_per_sm_bytes",
               "sm_count"]


def _improve(spec: HardwareSpec, field: str, factor: float, which: int) -> HardwareSpec:
    if field in ("peak", "vector"):
        attr = "tensor_flops_per_s" if field == "peak" else "vector_flops_per_s"
        table = dict(getattr(spec, attr))
        if not table:
            return spec
        key = sorted(table)[which % len(table)]
        table[key] *= factor
        return spec.model_copy(update={attr: table})
    value = getattr(spec, field)
    if value is None:
        return spec
    new = int(value * factor) if field == "sm_count" else value * factor
    return spec.model_copy(update={field: new})


@given(PROGRAMS, POLICIES, st.integers(0, 100), st.sampled_from(SPEC_FIELDS),
       st.floats(1.0, 64.0), st.integers(0, 7))
def test_bounds_never_increase_with_a_better_device(
    name: str, policy: str, si: int, field: str, factor: float, which: int
) -> None:
    spec = _specs()[si % len(_specs())]
    better = _improve(spec, field, factor, which)
    g = _graph(name)
    before, after = _bounds(g, spec, policy, {}), _bounds(g, better, policy, {})
    for m in BOUND_MODELS:
        assert after[m] <= before[m] * (1 + REL), (m, field)


@given(st.data(), PROGRAMS, POLICIES, st.integers(0, 100), st.integers(1, 9))
def test_bounds_never_decrease_with_larger_sizes(
    data: st.DataObject, name: str, policy: str, si: int, extra: int
) -> None:
    g = _graph(name)
    free = [d.name for d in g.program.sizes if isinstance(d.value, IntLit)]
    size = data.draw(st.sampled_from(free))
    spec = _specs()[si % len(_specs())]
    base = data.draw(_sizes(name))
    bigger = {**base, size: g.size_env(base)[size] + extra}
    before, after = _bounds(g, spec, policy, base), _bounds(g, spec, policy, bigger)
    for m in BOUND_MODELS:
        assert after[m] >= before[m] * (1 - REL), (m, size)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_sample_on_every_spec(name: str) -> None:
    g = _graph(name)
    for spec in _specs():
        t = _bounds(g, spec, "default", {})
        assert t["fused"] <= min(t["unfused"], t["cache-aware"]) * (1 + REL)
