"""Fuzz parse_program + verify_program with deterministic mutations of real programs.

Every variant must either verify or raise a `SolarError`; any other exception is a
bug in the parser, verifier or traversals. Variants that verify must print to a
fixed point, and `collect_errors` must start with the error `verify_program` raises.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from solar.diagnostics import IRVerifyError, SolarError
from solar.ir import collect_errors, parse_program, print_program, verify_program

from .mutate import mutate, tokens

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples" / "ir").glob("*.alir"))

INLINE = {
    "guards_and_locals": """solar-ir 1
program conv_like
size N = 6
size R = 3
size Ho = N - R + 1
input X : f32[N]
param Wt : f32[R]
output Y : f32[Ho]
output Z : f32[N]
kernel conv {
  local acc : f32[Ho]
  for o in 0 .. Ho {
    acc[o] = 0.0
    for r in 0 .. R {
      if 0 <= o + r - 1 and o + r - 1 < N {
        acc[o] += X[o + r - 1] * Wt[r]
      }
    }
    Y[o] = max(acc[o], 0.0)
  }
}
kernel pad {
  for i in 0 .. N step 2 {
    Z[i] = select(X[i] > 0.0, X[i], -X[i])
    if i + 1 < N {
      Z[i + 1] = f32(i64(X[i + 1]) % 3)
    }
  }
}
""",
    "scan_and_gather": """solar-ir 1
program scan_gather
size B = 2
size S = 5
size V = 7
input idx : i64[B, S]
param E : f32[V]
temp G : f32[B, S]
output C : f32[B, S]
output total : f32[]
kernel gather {
  for b in 0 .. B {
    for s in 0 .. S {
      G[b, s] = E[idx[b, s] % V]
    }
  }
}
kernel scan {
  total[] = 0.0
  for b in 0 .. B {
    C[b, 0] = G[b, 0]
    seq for s in 1 .. S {
      C[b, s] = C[b, s - 1] + G[b, s]
      total[] += C[b, s] * 0.5
    }
  }
}
""",
    "logic_and_casts": """solar-ir 1
program logic
size N = 4
size M = (N + 1) // 2
input X : f16[N, M]
temp mask : bool[N, M]
temp cnt : i32[N]
output Y : f16[N]
kernel k {
  for n in 0 .. N {
    cnt[n] = 0
    for m in 0 .. M {
      mask[n, m] = not isnan(f32(X[n, m])) and X[n, m] >= 0.0 or m == 0
      cnt[n] += i32(mask[n, m])
      cnt[n] max= min(n, m) - 1
    }
    Y[n] = f16(f32(cnt[n]) / 2.0 + exp(-inf) * 1e-05)
  }
}
""",
}

SOURCES = {p.stem: p.read_text(encoding="utf-8") for p in SAMPLES} | INLINE
TOTAL_VARIANTS = 3000
PER_SOURCE = max(100, math.ceil(TOTAL_VARIANTS / len(SOURCES)))


def _check_variant(text: str) -> str:
    """Parse and verify one variant; return the outcome (``ok`` or an error code)."""
    try:
        program = parse_program(text, filename="fuzz.alir")
    except SolarError as err:
        return err.code
    errors = collect_errors(program)
    raised: IRVerifyError | None = None
    try:
        verify_program(program)
    except IRVerifyError as err:
        raised = err
    if raised is not None:
        assert errors, "collect_errors found nothing but verify_program raised"
        assert (errors[0].code, errors[0].message) == (raised.code, raised.message)
        return raised.code
    assert errors == []
    printed = print_program(program)
    assert print_program(parse_program(printed)) == printed
    return "ok"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_source_is_valid_and_tokenizes(name: str) -> None:
    text = SOURCES[name]
    assert "".join(tokens(text)) == text
    verify_program(parse_program(text, filename=f"{name}.alir"))


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_mutations_fail_cleanly(name: str) -> None:
    text = SOURCES[name]
    outcomes: dict[str, int] = {}
    for n in range(PER_SOURCE):
        variant = mutate(text, f"{name}:{n}")
        try:
            code = _check_variant(variant)
        except Exception as err:
            err.add_note(f"fuzz seed {name!r}:{n}; the variant was:\n{variant}")
            raise
        outcomes[code] = outcomes.get(code, 0) + 1
    assert sum(outcomes.values()) == PER_SOURCE
    assert len(outcomes) >= 3, outcomes  # mutations reach several distinct diagnostics


def test_fuzz_budget() -> None:
    assert PER_SOURCE * len(SOURCES) >= TOTAL_VARIANTS
