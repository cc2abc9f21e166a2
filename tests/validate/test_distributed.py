"""The distributed executor: every collective against an independent numpy reference."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_cli

from solar.diagnostics import ExecutionError
from solar.ir import Collective, parse_program, verify_program
from solar.validate import execute_distributed, execute_program
from solar.validate.distributed import simulate_collective, specialize_rank

ROOT = Path(__file__).resolve().parents[2]
W = 4


def _program(decls: str, stmt: str) -> str:
    return (
        "solar-ir 1\nprogram t\nworld W = 4\nsize N = 8\ngroup tp = rank // 2\n"
        "group dp = rank % 2\n"
        f"input X : f32[N, 4]\n{decls}\nkernel c {{\n  {stmt}\n}}\n"
    )


def _xs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((8, 4)).astype(np.float32) for _ in range(W)]


Reference = Callable[[list[np.ndarray]], list[np.ndarray]]

CASES: list[tuple[str, str, str, Reference]] = [
    ("all_reduce_sum", "output Y : f32[N, 4]", "Y = all_reduce(X, op=sum)",
     lambda xs: [sum(xs)] * W),
    ("all_reduce_max_tp", "output Y : f32[N, 4]", "Y = all_reduce(X, op=max, group=tp)",
     lambda xs: [np.maximum(xs[0], xs[1])] * 2 + [np.maximum(xs[2], xs[3])] * 2),
    ("all_reduce_avg_dp", "output Y : f32[N, 4]", "Y = all_reduce(X, op=avg, group=dp)",
     lambda xs: [(xs[r % 2] + xs[r % 2 + 2]) / 2 for r in range(W)]),
    ("all_gather_dim1", "output Y : f32[N, 16]", "Y = all_gather(X, dim=1)",
     lambda xs: [np.concatenate(xs, axis=1)] * W),
    ("all_gather_stack", "output Y : f32[N, 2, 4]", "Y = all_gather(X, dim=1, group=tp)",
     lambda xs: [np.stack(xs[2 * (r // 2): 2 * (r // 2) + 2], axis=1) for r in range(W)]),
    ("reduce_scatter", "output Y : f32[2, 4]", "Y = reduce_scatter(X, op=sum, dim=0)",
     lambda xs: [sum(xs)[2 * r: 2 * r + 2] for r in range(W)]),
    ("all_to_all", "output Y : f32[2, 16]", "Y = all_to_all(X, split=0, concat=1)",
     lambda xs: [np.concatenate([x[2 * r: 2 * r + 2] for x in xs], axis=1) for r in range(W)]),
    ("broadcast_tp", "output Y : f32[N, 4]", "Y = broadcast(X, root=1, group=tp)",
     lambda xs: [xs[1], xs[1], xs[3], xs[3]]),
    ("ring", "output Y : f32[N, 4]", "Y = permute(X, to=(rank + 1) % W)",
     lambda xs: [xs[3], xs[0], xs[1], xs[2]]),
    ("pipeline", "output Y : f32[N, 4]", "Y = permute(X, to=rank + 1)",
     lambda xs: [np.zeros_like(xs[0]), xs[0], xs[1], xs[2]]),
]


@pytest.mark.parametrize(("name", "decls", "stmt", "ref"), CASES, ids=[c[0] for c in CASES])
def test_collective_matches_numpy(name: str, decls: str, stmt: str, ref: Reference) -> None:
    program = parse_program(_program(decls, stmt))
    verify_program(program)
    xs = _xs()
    got = execute_distributed(program, [{"X": x} for x in xs])
    for rank, (out, want) in enumerate(zip(got, ref(xs), strict=True)):
        np.testing.assert_allclose(out["Y"], want, rtol=1e-6, atol=1e-6, err_msg=f"rank {rank}")


def test_rank_in_subscripts_and_values() -> None:
    pre = "kernel pre {\n  for i in 0 .. 2 {\n    for j in 0 .. 4 {\n" \
        "      S[i, j] = X[i + 2 * rank, j] * f32(rank)\n    }\n  }\n}\n"
    text = _program("temp S : f32[2, 4]\noutput Y : f32[2, 4]", "Y = all_reduce(S, op=sum)")
    program = parse_program(text.replace("kernel c", pre + "kernel c"))
    verify_program(program)
    xs = _xs(1)
    got = execute_distributed(program, [{"X": x} for x in xs])
    want = sum(xs[r][2 * r: 2 * r + 2] * r for r in range(W))
    for out in got:
        np.testing.assert_allclose(out["Y"], want, rtol=1e-5, atol=1e-6)


def test_tp_mlp_sample_matches_the_unsharded_mlp() -> None:
    program = parse_program((ROOT / "samples" / "dist" / "tp_mlp.alir").read_text())
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    w1 = rng.standard_normal((32, 16)).astype(np.float32)
    w2 = rng.standard_normal((16, 32)).astype(np.float32)
    shards = [{"X": x, "W1": w1[16 * r: 16 * r + 16], "W2": w2[:, 16 * r: 16 * r + 16]}
              for r in range(2)]
    want = np.maximum(x @ w1.T, 0.0) @ w2.T
    for out in execute_distributed(program, shards):
        np.testing.assert_allclose(out["Y"], want, rtol=1e-4, atol=1e-4)


def test_reduce_scatter_can_drop_the_scattered_axis() -> None:
    coll = Collective("reduce_scatter", "Y", "X", op="sum", dim=0)
    xs = [np.arange(6.0).reshape(2, 3) * (r + 1) for r in range(2)]
    got = simulate_collective(coll, xs, [(0, 1)], target_ndim=1)
    np.testing.assert_allclose(got[0], (xs[0] + xs[1])[0])
    np.testing.assert_allclose(got[1], (xs[0] + xs[1])[1])


def test_mismatched_shapes_across_ranks_is_e0352() -> None:
    coll = Collective("all_reduce", "Y", "X", op="sum")
    with pytest.raises(ExecutionError) as err:
        simulate_collective(coll, [np.zeros(3), np.zeros(4)], [(0, 1)])
    assert err.value.code == "E0352"


def test_wrong_number_of_input_sets_is_e0350() -> None:
    program = parse_program(_program("output Y : f32[N, 4]", "Y = all_reduce(X, op=sum)"))
    with pytest.raises(ExecutionError) as err:
        execute_distributed(program, [{"X": x} for x in _xs()[:3]])
    assert err.value.code == "E0350"


def test_single_device_executor_refuses_a_distributed_program() -> None:
    program = parse_program(_program("output Y : f32[N, 4]", "Y = all_reduce(X, op=sum)"))
    with pytest.raises(ExecutionError) as err:
        execute_program(program, {"X": _xs()[0]})
    assert err.value.code == "E0350"


def test_unwritten_source_is_e0351() -> None:
    text = _program("temp S : f32[N, 4]\noutput Y : f32[N, 4]", "Y = all_reduce(S, op=sum)")
    text += "kernel k {\n  Y[0, 0] = S[0, 0]\n}\n"
    program = parse_program(text.replace("kernel c", "kernel pre {\n  S[0, 0] = 1.0\n}\nkernel c"))
    with pytest.raises(ExecutionError) as err:
        execute_distributed(program, [{"X": x} for x in _xs()])
    assert err.value.code == "E0351"


def test_world_size_can_be_rebound() -> None:
    program = parse_program(_program("output Y : f32[N, 4]", "Y = all_reduce(X, op=sum)"))
    xs = _xs()[:2]
    got = execute_distributed(program, [{"X": x} for x in xs], sizes={"W": 2})
    np.testing.assert_allclose(got[1]["Y"], xs[0] + xs[1], rtol=1e-6)


def test_specialize_rank_keeps_programs_without_rank() -> None:
    program = parse_program(_program("output Y : f32[N, 4]", "Y = all_reduce(X, op=sum)"))
    assert specialize_rank(program, 3) is program


def test_ir_run_executes_every_rank(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "o.npz"
    r = run_cli(capsys, "ir", "run", str(ROOT / "samples" / "dist" / "zero_ring.alir"),
                "-o", str(out))
    assert r.code == 0, r.err
    assert [line.split(":")[0] for line in r.out.splitlines()] == [
        f"r{rank}.{name}" for rank in range(4) for name in ("P", "R")
    ]
    with np.load(out) as got:  # the ring: rank r receives rank r - 1's P
        for rank in range(4):
            np.testing.assert_array_equal(got[f"r{rank}.R"], got[f"r{(rank - 1) % 4}.P"])
