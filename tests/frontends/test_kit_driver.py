"""The kit's base driver: rollback of rejected lowerings, uncovered values, keep-alive."""

from __future__ import annotations

import pytest

from solar.diagnostics import FrontendError
from solar.frontends.kit import (
    LoweringDriver,
    TensorInfo,
    Unsupported,
    UnsupportedOpError,
    input_name,
    output_name,
    uncovered_name,
)
from solar.ir import Assign, DType


def _rejected(drv: LoweringDriver, x: TensorInfo, extra: dict[str, int]) -> None:
    """A lowering that declares, emits and records, then rejects the op."""
    t = drv.declare("temp", DType.F32, (4,), "t0_neg")
    kb = drv.pb.kernel("neg")
    (i,) = kb.fresh_vars(1)
    kb.emit(Assign(t.at([i]), x.at([i])))
    drv.pb.finish_kernel(kb)
    drv.notes.append("half-way")
    extra["late"] = 1
    raise UnsupportedOpError("negative strides")


def test_a_rejected_lowering_leaves_no_trace() -> None:
    drv = LoweringDriver("p")
    x = drv.declare("input", DType.F32, (4,), input_name(0), exact=True)
    extra: dict[str, int] = drv.journaled({"early": 0})
    before = drv.pb.build()
    got = drv.attempt(lambda: _rejected(drv, x, extra))
    assert got == Unsupported("negative strides")
    assert drv.pb.build() == before
    assert not drv.notes
    assert extra == {"early": 0}
    assert drv.declare("temp", DType.F32, (4,), "t0_neg").ref.name == "t0_neg"  # name freed


def test_uncovered_ops_are_reported_kept_alive_and_fed() -> None:
    drv = LoweringDriver("p")
    x = drv.declare("input", DType.F32, (4,), input_name(0), exact=True)
    drv.count(32)
    drv.count(16)
    drv.uncover("sort", 16, "no lowering", [x, 2.0])
    u = drv.declare_uncovered(uncovered_name(1, "sort"), DType.F32, (4,), (1,), 0)
    y = drv.declare("output", DType.F32, (4,), output_name(0), exact=True)
    kb = drv.pb.kernel("copy")
    (i,) = kb.fresh_vars(1)
    kb.emit(Assign(y.at([i]), u.at([i])))
    drv.pb.finish_kernel(kb)
    low = drv.lowered(drv.pb.build(), inputs=("x0",), params=(), outputs=("y0",))
    assert [v.name for v in low.uncovered_values] == ["u1_sort"]
    assert low.keep_alive == ("x0",)
    (op,) = low.coverage
    assert (op.target, op.count) == ("sort", 1)
    assert op.bytes_share == pytest.approx(1 / 3)
    assert (low.ops_seen, low.fully_covered) == (2, False)


def test_interface_names_are_exact() -> None:
    drv = LoweringDriver("p")
    drv.declare("input", DType.F32, (4,), "x0", exact=True)
    with pytest.raises(FrontendError) as info:
        drv.declare("input", DType.F32, (4,), "x0", exact=True)
    assert info.value.code == "E0512"
