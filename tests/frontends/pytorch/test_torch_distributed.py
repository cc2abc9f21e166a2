"""torch.distributed programs: per-rank capture under the fake process group, the rank
merge, and validation against a real gloo run (small: 2 to 4 CPU processes)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from solar.diagnostics import FrontendError
from solar.frontends.kit.collectives import group_for
from solar.frontends.pytorch.distributed import (
    capture_distributed,
    validate_with_gloo,
    world_size_of,
)
from solar.ir import collectives, print_program, verify_program
from solar.validate import execute_distributed

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "torch"

HEADER = """
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

WORLD_SIZE = 2
"""


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "model.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def test_tp_mlp_is_one_spmd_program_with_one_all_reduce() -> None:
    d = capture_distributed(SAMPLES / "dist_tp_mlp.py")
    verify_program(d.program)
    assert d.world == 2 and d.program.world == "W"
    assert all(r.coverage == () for r in d.ranks)
    (info,) = collectives(d.program)
    assert (info.kind, info.op, info.group, info.buffer_bytes) == ("all_reduce", "sum", None,
                                                                  8 * 32 * 4)


def test_every_functional_collective_is_lowered() -> None:
    d = capture_distributed(SAMPLES / "dist_collectives.py")
    verify_program(d.program)
    kinds = [(c.kind, c.op, c.group, c.groups) for c in collectives(d.program)]
    tp = ((0, 1), (2, 3))
    assert kinds == [
        ("all_reduce", "sum", "g2s1", tp),
        ("all_gather", None, "g2s1", tp),
        ("reduce_scatter", "avg", "g2s1", tp),
        ("all_to_all", None, "g2s1", tp),
        ("broadcast", None, "g2s1", tp),
        ("all_reduce", "max", None, ((0, 1, 2, 3),)),
    ]
    assert "group g2s1 = rank // 2" in print_program(d.program)


def test_the_merged_program_runs_on_every_rank() -> None:
    d = capture_distributed(SAMPLES / "dist_tp_mlp.py")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    shards = [
        {"x0": x, "p_up_weight": rng.standard_normal((32, 32)).astype(np.float32),
         "p_down_weight": rng.standard_normal((32, 32)).astype(np.float32)}
        for _ in range(2)
    ]
    outs = execute_distributed(d.program, shards)
    want = sum(np.maximum(x @ s["p_up_weight"].T, 0) @ s["p_down_weight"].T for s in shards)
    for out in outs:
        np.testing.assert_allclose(out["y0"], want, rtol=1e-4, atol=1e-4)


def test_mismatched_collective_shapes_across_ranks_is_e0550(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        class Model(nn.Module):
            def forward(self, x):
                rows = 4 + 2 * dist.get_rank()
                return funcol.all_reduce(x[:rows] * 2.0, "sum", dist.group.WORLD)

        def get_inputs():
            return [torch.randn(8, 4)]
    """)
    with pytest.raises(FrontendError) as err:
        capture_distributed(path)
    assert err.value.code == "E0550"


def test_ranks_running_different_programs_is_e0552(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        class Model(nn.Module):
            def forward(self, x):
                y = torch.tanh(x) if dist.get_rank() == 0 else torch.sigmoid(x)
                return funcol.all_reduce(y, "sum", dist.group.WORLD)

        def get_inputs():
            return [torch.randn(8, 4)]
    """)
    with pytest.raises(FrontendError) as err:
        capture_distributed(path)
    assert err.value.code == "E0552"


def test_missing_world_size_is_e0554(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("import torch\n")
    with pytest.raises(FrontendError) as err:
        world_size_of(path)
    assert err.value.code == "E0554"


def test_merge_rejects_a_group_that_is_no_mesh_axis() -> None:
    with pytest.raises(FrontendError) as err:
        group_for([0, 1, 3], 4)
    assert err.value.code == "E0551"


def test_tp_mlp_matches_a_real_gloo_run() -> None:
    check = validate_with_gloo(SAMPLES / "dist_tp_mlp.py", timeout_s=240)
    assert check.world == 2
    assert check.sizes == {"WORLD_SIZE": 2, "B": 8, "D": 32, "F": 64, "W": 2}
    assert check.max_abs_error["y0"] < 1e-4


def test_a_deadlocking_rank_is_e0555_not_a_hang(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        class Model(nn.Module):
            def forward(self, x):
                if dist.get_rank() == 0:  # rank 1 never joins: rank 0 waits forever
                    x = funcol.all_reduce(x, "sum", dist.group.WORLD)
                return x * 2.0

        def get_inputs():
            return [torch.randn(4, 4)]
    """)
    with pytest.raises(FrontendError) as err:
        validate_with_gloo(path, timeout_s=45)
    assert err.value.code == "E0555"


def test_dtensor_tensor_parallel_mlp_matches_a_real_gloo_run() -> None:
    d = capture_distributed(SAMPLES / "dist_dtensor_mlp.py")
    verify_program(d.program)
    assert [(c.kind, c.group) for c in collectives(d.program)] == [("all_reduce", None)]
    # each rank holds half of the 64 hidden units (ColwiseParallel / RowwiseParallel)
    shapes = [print_program(d.program).count(f"param {t.name} : f32[32, 32]")
              for t in d.program.tensors if t.role == "param"]
    assert shapes == [1, 1]
    check = validate_with_gloo(SAMPLES / "dist_dtensor_mlp.py", timeout_s=240)
    assert check.max_abs_error["y0"] < 1e-4


def test_analyze_bounds_a_distributed_file_per_rank() -> None:
    from solar.pipeline import AnalyzeOptions, analyze

    report = analyze(SAMPLES / "dist_tp_mlp.py", AnalyzeOptions())
    assert report.sizes == {"W": 2}
    assert report.ir.kernels == 4
    assert "fake process group" in report.frontend.captured_with
    # validated as the CLI runs it: every rank against 2 real gloo processes, and the
    # report says which world size and sizes were checked
    v = report.validation
    assert (v.status, v.strategy) == ("passed", "real run on 2 gloo processes")
    assert v.sizes["W"] == 2 and "world size 2" in (v.reason or "")
    assert v.outputs and all(o.passed and (o.max_abs_error or 0.0) < 1e-4 for o in v.outputs)


def test_in_place_c10d_collectives_match_a_real_gloo_run() -> None:
    d = capture_distributed(SAMPLES / "dist_inplace.py")
    verify_program(d.program)
    got = [(c.kind, c.op) for c in collectives(d.program)]
    assert got == [("all_reduce", "max"), ("broadcast", None), ("all_gather", None),
                   ("reduce_scatter", "sum")]
    check = validate_with_gloo(SAMPLES / "dist_inplace.py", timeout_s=240)
    assert set(check.max_abs_error) == {"y0", "y1"}
    assert max(check.max_abs_error.values()) < 1e-5


def test_send_recv_ring_is_a_permute_and_matches_gloo() -> None:
    d = capture_distributed(SAMPLES / "dist_ring.py")
    verify_program(d.program)
    (ring,) = collectives(d.program)
    assert ring.kind == "permute"
    assert ring.pairs == ((0, 1), (1, 2), (2, 3), (3, 0))
    assert "to=(rank + 1) % W" in print_program(d.program)
    # the real run at a reduced world size: two ranks swap
    check = validate_with_gloo(SAMPLES / "dist_ring.py", world=2, timeout_s=240)
    assert check.world == 2 and check.sizes["W"] == 2
    assert check.max_abs_error["y0"] < 1e-5


def test_batch_isend_irecv_is_a_permute_and_matches_gloo() -> None:
    d = capture_distributed(SAMPLES / "dist_batch_p2p.py")
    verify_program(d.program)
    right, left = collectives(d.program)  # the sends, in the batch's order
    assert right.kind == left.kind == "permute"
    assert right.pairs == ((0, 1), (1, 2), (2, 3), (3, 0))
    assert left.pairs == ((0, 3), (1, 0), (2, 1), (3, 2))
    check = validate_with_gloo(SAMPLES / "dist_batch_p2p.py", timeout_s=240)
    assert check.world == 4 and check.max_abs_error["y0"] < 1e-5


def test_a_batch_posting_its_receive_first_pairs_with_its_send(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        class Model(nn.Module):
            def forward(self, x):
                rank, world = dist.get_rank(), dist.get_world_size()
                got = torch.empty_like(x)
                ops = [dist.P2POp(dist.irecv, got, (rank - 1) % world),
                       dist.P2POp(dist.isend, x * 3.0, (rank + 1) % world)]
                for work in dist.batch_isend_irecv(ops):
                    work.wait()
                return got + 1.0

        def get_inputs():
            return [torch.randn(4, 4)]
    """)
    d = capture_distributed(path)
    (swap,) = collectives(d.program)
    assert swap.kind == "permute" and swap.pairs == ((0, 1), (1, 0))


DDP_PARAM_BYTES = (32 * 16 + 32 + 16 * 32 + 16) * 4
"""The MLP of dist_ddp_mlp.py: its gradients, f32."""


def test_ddp_gradients_are_all_reduced_once_each() -> None:
    d = capture_distributed(SAMPLES / "dist_ddp_mlp.py")
    verify_program(d.program)
    assert all(r.coverage == () for r in d.ranks)
    reduced = collectives(d.program)
    assert {(c.kind, c.op, c.group) for c in reduced} == {("all_reduce", "sum", None)}
    assert sorted(c.buffer_bytes for c in reduced) == [16 * 4, 32 * 4, 512 * 4, 512 * 4]
    assert sum(c.buffer_bytes for c in reduced) == DDP_PARAM_BYTES


def test_ddp_step_matches_a_real_gloo_run() -> None:
    check = validate_with_gloo(SAMPLES / "dist_ddp_mlp.py", timeout_s=240)
    assert check.world == 2 and set(check.max_abs_error) == {"y0", "y1", "y2", "y3", "y4"}
    assert max(check.max_abs_error.values()) < 1e-6


_DDP_TWIN = """
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from solar.frontends.pytorch.capture_dist import distributed_capture

rank, store, sample = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)
ns = {}
exec(open(sample).read(), ns)

def grads(emulated):
    torch.manual_seed(0)
    model = ns["MLP"]()
    with distributed_capture() if emulated else torch.enable_grad():
        x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1)) * (1 + rank)
        ddp = DDP(model)  # alive until the backward ran: its reducer reduces
        ddp(x).square().mean().backward()
    return [p.grad for p in model.parameters()]

real, ours = grads(False), grads(True)
print(max(float((a - b).abs().max()) for a, b in zip(real, ours, strict=True)))
dist.destroy_process_group()
"""


def _twin_errors(script: str, sample: Path, tmp_path: Path) -> list[float]:
    """Run ``script`` on two real gloo ranks; the largest difference each prints."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(r), str(tmp_path / "store"),
                          str(sample)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for r in range(2)
    ]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs[0][1][-500:]
    return [float(out.decode().strip()) for out, _ in outs]


def test_ddp_capture_reduces_gradients_as_ddps_own_reducer(tmp_path: Path) -> None:
    """Note [DDP capture]: the Python reduction gives the gradients DDP's C++ reducer
    gives, on a real two-rank gloo run."""
    errors = _twin_errors(_DDP_TWIN, SAMPLES / "dist_ddp_mlp.py", tmp_path)
    assert all(e < 1e-6 for e in errors)


_DDP_BN_TWIN = _DDP_TWIN[:_DDP_TWIN.index("def grads")] + """
def step(emulated):
    torch.manual_seed(0)
    model = ns["Model"]()
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1)) * (1 + rank)
    with distributed_capture() if emulated else torch.enable_grad():
        return model(x)

real, ours = step(False), step(True)
print(max(float((a - b).abs().max()) for a, b in zip(real, ours, strict=True)))
dist.destroy_process_group()
"""


def test_ddp_broadcasts_buffers_from_rank_0_before_the_forward() -> None:
    """Note [DDP capture]: with broadcast_buffers (the default) each forward broadcasts
    the module's buffers (BatchNorm's running mean, variance and batch count) from rank
    0, one in-place broadcast each, before the gradients' all-reduces; the simulated IR
    matches the gloo run, whose ranks' statistics differ before the step."""
    d = capture_distributed(SAMPLES / "dist_ddp_bn.py")
    verify_program(d.program)
    reduced = collectives(d.program)
    casts = [c for c in reduced if c.kind == "broadcast"]
    assert sorted(c.buffer_bytes for c in casts) == [8, 32 * 4, 32 * 4]
    assert list(reduced[:3]) == casts  # before the forward's work
    assert {c.kind for c in reduced[3:]} == {"all_reduce"}
    check = validate_with_gloo(SAMPLES / "dist_ddp_bn.py", timeout_s=240)
    assert check.world == 2 and max(check.max_abs_error.values()) < 1e-6


def test_ddp_buffer_broadcast_is_ddps_own(tmp_path: Path) -> None:
    """The emulated forward gives what DDP's own `_pre_forward` broadcast gives: the
    loss, gradients and running statistics of each rank, on a real two-rank gloo run."""
    errors = _twin_errors(_DDP_BN_TWIN, SAMPLES / "dist_ddp_bn.py", tmp_path)
    assert all(e < 1e-6 for e in errors)


def test_rank_dependent_literals_become_affine_in_rank() -> None:
    d = capture_distributed(SAMPLES / "dist_rank_slices.py")
    verify_program(d.program)
    text = print_program(d.program)
    for line in ("x0[i0 + 4 * rank, i1]", "t2_full[i0, i1] = rank", "* (1.0 + 0.5 * rank)"):
        assert line in text
    check = validate_with_gloo(SAMPLES / "dist_rank_slices.py", timeout_s=240)
    assert check.world == 3 and check.max_abs_error["y0"] < 1e-5


def test_rank_dependent_literals_that_are_not_affine_are_e0552(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        class Model(nn.Module):
            def forward(self, x):
                r = dist.get_rank()
                return funcol.all_reduce(x[r * r : r * r + 2] * 2.0, "sum", dist.group.WORLD)

        def get_inputs():
            return [torch.randn(8, 4)]
    """)
    path.write_text(path.read_text().replace("WORLD_SIZE = 2", "WORLD_SIZE = 3"))
    with pytest.raises(FrontendError) as err:  # offsets 0, 1, 4: two ranks always fit
        capture_distributed(path)
    assert err.value.code == "E0552" and "a + b * rank" in err.value.notes[0]


def test_fsdp2_gathers_parameters_and_reduce_scatters_gradients() -> None:
    d = capture_distributed(SAMPLES / "dist_fsdp_mlp.py")
    verify_program(d.program)
    assert all(r.coverage == () for r in d.ranks)
    up, down = (32 * 16 + 32) * 4, (16 * 32 + 16) * 4  # each layer's full parameters
    got = [(c.kind, c.op, c.buffer_bytes) for c in collectives(d.program)]
    assert got == [("all_gather", None, up), ("all_gather", None, down),
                   ("reduce_scatter", "avg", down), ("reduce_scatter", "avg", up)]
    check = validate_with_gloo(SAMPLES / "dist_fsdp_mlp.py", timeout_s=240)
    assert check.world == 2 and max(check.max_abs_error.values()) < 1e-6


def test_fsdp2_copy_ops_as_aten_ops_match_torchs() -> None:
    """Note [FSDP2 capture]: the replacements write what the fsdp ops write."""
    import torch
    from torch.distributed.fsdp._fully_shard import _fsdp_collectives

    from solar.frontends.pytorch.capture_dist import distributed_capture

    assert _fsdp_collectives is not None  # defines the fsdp ops
    g = torch.Generator().manual_seed(0)
    shards = [torch.randn(12, generator=g), torch.randn(6, generator=g)]
    grads = [torch.randn(8, 3, generator=g), torch.randn(4, generator=g)]
    gathered = torch.randn(2, 18, generator=g)

    def run() -> list[torch.Tensor]:
        buffer = torch.zeros(36)
        given, _ = torch.ops.fsdp.all_gather_copy_in(shards, buffer, [12, 6], 18, 1)
        outs = [torch.zeros(2, 12), torch.zeros(2, 6)]
        torch.ops.fsdp.split_with_sizes_copy(gathered, [12, 6], dim=1, out=outs)
        packed = torch.zeros(28)
        torch.ops.fsdp.chunk_cat(grads, 0, 2, out=packed)
        return [given.clone(), *outs, packed]

    want = run()
    with distributed_capture():
        got = run()
    for a, b in zip(got, want, strict=True):  # torch's chunk_cat also reshapes `out`
        torch.testing.assert_close(a.reshape(-1), b.reshape(-1), rtol=0, atol=0)


def test_ddp_under_train_all_reduces_in_the_backward_and_matches_gloo() -> None:
    from solar.frontends.pytorch.train_step import TrainStep

    d = capture_distributed(SAMPLES / "dist_ddp_train.py", step=TrainStep())
    verify_program(d.program)
    reduces = [k.name for k in d.program.kernels if k.collective is not None]
    assert reduces and all(name.startswith("backward_all_reduce") for name in reduces)
    assert any(k.name.startswith("optimizer_") for k in d.program.kernels)
    assert sum(c.buffer_bytes for c in collectives(d.program)) == (16 * 32 + 32 + 32 * 8 + 8) * 4
    check = validate_with_gloo(SAMPLES / "dist_ddp_train.py", train=True, timeout_s=240)
    assert check.world == 2 and len(check.max_abs_error) == 9  # loss, 4 grads, 4 params
    assert max(check.max_abs_error.values()) < 1e-6


def test_ddp_no_sync_micro_batch_is_not_all_reduced(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        from torch.nn.parallel import DistributedDataParallel

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.ddp = DistributedDataParallel(nn.Linear(8, 4))

            def forward(self, x):
                with torch.enable_grad():
                    with self.ddp.no_sync():  # accumulate: no communication
                        self.ddp(x[:2]).sum().backward()
                    self.ddp(x[2:]).sum().backward()  # the last micro-batch reduces
                return tuple(p.grad for p in self.ddp.parameters())

        def get_inputs():
            return [torch.randn(4, 8)]
    """)
    d = capture_distributed(path)
    assert [c.buffer_bytes for c in collectives(d.program)] == [4 * 4, 32 * 4]


def test_ddp_with_a_compressing_comm_hook_is_e0559(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        from torch.nn.parallel import DistributedDataParallel

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.ddp = DistributedDataParallel(nn.Linear(8, 4))
                self.ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)

            def forward(self, x):
                return self.ddp(x)

        def get_inputs():
            return [torch.randn(4, 8)]
    """)
    with pytest.raises(FrontendError) as err:
        capture_distributed(path)
    assert err.value.code == "E0559"
