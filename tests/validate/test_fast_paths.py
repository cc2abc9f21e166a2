"""Fast paths of the executor (issue: Speed): carried scans and tap-split scatters.

Each IR runs through `execute_program` and is compared with a plain-numpy reference;
the carried scan and the tap split are also checked to be taken (`match_scan`,
`split_taps`), since the slow paths give the same numbers.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.ir import For, parse_program
from solar.validate import execute_program
from solar.validate.grids import Axis, Domain, split_taps
from solar.validate.scan import match_scan

CARRIED = """solar-ir 1
program carried
input x : f32[{rows}, {n}]
output y : f32[{rows}, {n}]
kernel cum {{
  local carry : f32[{rows}]
  for i in 0 .. {rows} {{
    carry[i] = x[i, 0]
    y[i, 0] = carry[i]
  }}
  seq for t in 1 .. {n} {{
    for i in 0 .. {rows} {{
      carry[i] = {update}
      y[i, t] = carry[i]
    }}
  }}
}}
"""


@pytest.mark.parametrize(
    ("update", "reference"),
    [
        ("carry[i] + x[i, t]", lambda x: np.cumsum(x, axis=1)),
        ("x[i, t] * carry[i]", lambda x: np.cumprod(x, axis=1)),
        ("max(carry[i], x[i, t])", lambda x: np.maximum.accumulate(x, axis=1)),
    ],
)
def test_carried_scan_is_one_accumulate(update: str, reference: object) -> None:
    program = parse_program(CARRIED.format(rows=3, n=300, update=update))
    loop = program.kernels[0].body[1]
    assert isinstance(loop, For)
    match = match_scan(loop, {})
    assert match is not None
    assert match.copy is not None
    x = np.random.default_rng(0).uniform(0.9, 1.1, (3, 300)).astype(np.float32)
    out = execute_program(program, {"x": x})["y"]
    np.testing.assert_allclose(out, reference(x), rtol=1e-5)  # type: ignore[operator]


def test_carried_scan_needs_the_copy_of_the_carry() -> None:
    # the store reads something else than the carry: not the carried form
    text = CARRIED.format(rows=2, n=5, update="carry[i] + x[i, t]").replace(
        "y[i, t] = carry[i]\n    }\n  }", "y[i, t] = carry[i] + 1.0\n    }\n  }"
    )
    loop = parse_program(text).kernels[0].body[1]
    assert isinstance(loop, For)
    assert match_scan(loop, {}) is None


CONV_T1D = """solar-ir 1
program convt
input x : f32[{n}, {c}, {length}]
param w : f32[{c}, {k}, {taps}]
output y : f32[{n}, {k}, {out}]
kernel convt {{
  for a in 0 .. {n} {{
    for b in 0 .. {k} {{
      for o in 0 .. {out} {{
        y[a, b, o] = 0.0
      }}
    }}
  }}
  for a in 0 .. {n} {{
    for c in 0 .. {c} {{
      for i in 0 .. {length} {{
        for b in 0 .. {k} {{
          for r in 0 .. {taps} {{
            if 0 <= {s} * i + r - {p} and {s} * i + r - {p} < {out} {{
              y[a, b, {s} * i + r - {p}] += x[a, c, i] * w[c, b, r]
            }}
          }}
        }}
      }}
    }}
  }}
}}
"""


def _conv_t1d(x: np.ndarray, w: np.ndarray, s: int, p: int, out: int) -> np.ndarray:
    n, _, length = x.shape
    y = np.zeros((n, w.shape[1], out), dtype=np.float64)
    for i in range(length):
        for r in range(w.shape[2]):
            o = s * i + r - p
            if 0 <= o < out:
                y[:, :, o] += np.einsum("nc,ck->nk", x[:, :, i], w[:, :, r])
    return y


@settings(max_examples=25, deadline=None)
@given(
    c=st.integers(1, 4),
    k=st.integers(1, 4),
    length=st.integers(1, 9),
    taps=st.integers(1, 5),
    s=st.integers(1, 3),
    p=st.integers(0, 2),
)
def test_transposed_convolution_matches_numpy(
    c: int, k: int, length: int, taps: int, s: int, p: int
) -> None:
    out = max(1, (length - 1) * s + taps - 2 * p)
    program = parse_program(
        CONV_T1D.format(n=2, c=c, k=k, length=length, taps=taps, s=s, p=p, out=out)
    )
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, c, length)).astype(np.float32)
    w = rng.standard_normal((c, k, taps)).astype(np.float32)
    got = execute_program(program, {"x": x, "w": w})["y"]
    np.testing.assert_allclose(got, _conv_t1d(x, w, s, p, out), rtol=1e-4, atol=1e-4)


def test_split_taps_partitions_the_active_points() -> None:
    from solar.ir import Lin

    # y[2 * i + r - 1] over i in 0..4, r in 0..3, guarded to 0 <= 2i + r - 1 < 8
    i_ax, r_ax = Axis("i", 0, 0, 1, 4), Axis("r", 1, 0, 1, 3)
    i, r = np.arange(4)[:, None], np.arange(3)[None, :]
    mask = (2 * i + r - 1 >= 0) & (2 * i + r - 1 < 8)
    domain = Domain(2, {"i": i_ax, "r": r_ax}, {}, mask)
    pieces = split_taps(domain, [Lin.of({"i": 2, "r": 1}, -1)])
    assert pieces is not None
    assert len(pieces) == 3  # one per tap r
    points = sorted(
        (int(i_), p.axes["r"].start)
        for p in pieces
        for i_ in p.axes["i"].array()
        if p.mask is None or p.mask.reshape(-1)[int(i_) - p.axes["i"].start]
    )
    assert points == sorted((int(a), int(b)) for a, b in zip(*np.nonzero(mask), strict=True))
    # the r = 0 piece loses i = 0 (subscript -1): trimmed, so its target is in bounds
    first = next(p for p in pieces if p.axes["r"].start == 0)
    assert (first.axes["i"].start, first.axes["i"].count, first.mask) == (1, 3, None)
