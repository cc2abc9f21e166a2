"""The JAX zoo (jax_zoo.py): equinox and flax.nnx programs and training steps analyse
complete and validate; so do MJX and brax (slow)."""

from __future__ import annotations

import importlib.util

import pytest
from jax_zoo import JAX_ZOO, JaxZooEntry, run_jax_program

pytest.importorskip("jax")
pytestmark = pytest.mark.jax


def _param(e: JaxZooEntry) -> object:
    marks = [pytest.mark.slow] if e.slow else []
    if e.known_gap:
        marks.append(pytest.mark.xfail(reason=e.known_gap, strict=False))
    return pytest.param(e, id=e.name, marks=marks)


def test_jax_zoo_covers_the_libraries_and_trains_each_framework() -> None:
    assert {e.name.split("/")[0] for e in JAX_ZOO} == {"equinox", "flax.nnx", "mjx", "brax"}
    assert {e.name.split("/")[0] for e in JAX_ZOO if e.train} == {"equinox", "flax.nnx"}


@pytest.mark.parametrize("entry", [_param(e) for e in JAX_ZOO])
def test_jax_zoo_program(entry: JaxZooEntry) -> None:
    missing = [m for m in entry.requires if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (pip install -e '.[zoo]')")
    row = run_jax_program(entry)
    assert row.coverage_complete, row.uncovered
    assert row.validation.startswith("passed"), row.validation
    assert row.solar_flops > 0
