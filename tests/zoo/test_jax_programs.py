"""JAX programs as users write them (jax_user_programs/): flax.linen and flax.nnx models,
equinox modules, optax steps, autodiff and lax control-flow combinations, and the jnp/lax
op families. Each is analysed as `solar analyze FILE [--train]`: complete (or its
uncovered ops reported with their byte share), validated, kernels named from the source,
and its FLOPs near XLA's own count of the unoptimised HLO (``cost_analysis``, flops plus
transcendentals: docs/jax.md § XLA cross-check says where the two differ)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytestmark = pytest.mark.jax

PROGRAMS = Path(__file__).resolve().parent / "jax_user_programs"

NEAR = (0.6, 1.2)
"""SOLAR / XLA FLOPs of a loop-free program: XLA counts each transcendental's expansion
(erf, logistic), N - 1 combines per reduction and every window tap (padding included);
SOLAR counts N, skips masked attention scores and removes repeated work (remat)."""
LOOP = (1.0, 25.0)
"""XLA costs a while loop's body once; SOLAR counts every iteration."""


@dataclass(frozen=True, slots=True)
class Program:
    """One program: its file stem, ``--train``, the ops it leaves uncovered, and the
    range of SOLAR/XLA FLOPs."""

    name: str
    train: bool = False
    uncovered: frozenset[str] = frozenset()
    ratio: tuple[float, float] = NEAR
    slow: bool = False


PROGRAMS_TABLE: tuple[Program, ...] = (
    Program("linen_mlp"),
    Program("linen_cnn"),
    Program("linen_resblock"),
    Program("linen_transformer", slow=True),
    Program("linen_embed_rmsnorm"),
    Program("nnx_cnn"),
    Program("nnx_transformer", slow=True),
    Program("nnx_embed_rmsnorm"),
    Program("eqx_conv"),
    Program("eqx_mha"),
    Program("eqx_lstm", ratio=LOOP),
    Program("eqx_gru", ratio=LOOP),
    Program("optax_adam_linen", train=True),
    Program("optax_adamw_nnx", train=True),
    Program("optax_sgd_momentum", train=True),
    Program("optax_lion", train=True),
    Program("optax_chain_clip", train=True),
    Program("eqx_adam_train", train=True),
    # AdamW on a key bias (its gradient is rounding noise): Note [Float64 noise floor]
    Program("linen_transformer_train", train=True, slow=True),
    Program("grad_vmap_jit"),
    Program("remat_mlp", train=True),
    Program("vmap_jacobian"),
    Program("scan_rnn", ratio=LOOP),
    Program("scan_rnn_train", train=True, ratio=LOOP),
    Program("fori_while", ratio=LOOP),
    Program("cond_prog"),
    Program("einsum_variants"),
    Program("dpa"),
    Program("dpa_gqa_bias"),
    Program("fft_prog", uncovered=frozenset({"fft", "abs"})),  # complex values
    Program("segment_sum"),
    Program("gather_scatter"),
    Program("cumsum_cumprod", ratio=(0.1, 1.2)),  # XLA: a cumsum is an n-tap window
    Program("sort_topk"),
    Program("conv_variants"),
    Program("conv1d_3d"),
    Program("pool_reduce_window"),
    Program("custom_vjp"),
    Program("jnp_misc"),
)


def test_the_table_is_the_directory() -> None:
    assert {p.name for p in PROGRAMS_TABLE} == {f.stem for f in PROGRAMS.glob("*.py")}


def _xla_flops(notes: list[str]) -> float:
    for note in notes:
        m = re.search(r"XLA cost_analysis \(unoptimized\):.*flops ([\d.e+]+), "
                      r"transcendentals ([\d.e+]+)", note)
        if m:
            return float(m.group(1)) + float(m.group(2))
    raise AssertionError(f"no XLA cost analysis among {notes}")


@pytest.mark.parametrize(
    "program",
    [pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.slow else []) for p in
     PROGRAMS_TABLE],
)
def test_jax_program(program: Program) -> None:
    for module in ("flax", "equinox", "optax"):
        pytest.importorskip(module)
    from solar.pipeline import AnalyzeOptions, analyze

    report = analyze(PROGRAMS / f"{program.name}.py", AnalyzeOptions(train_step=program.train))
    uncovered = {u.op for u in report.coverage.uncovered}
    assert uncovered == program.uncovered
    assert all(0.0 < u.bytes_share < 1.0 for u in report.coverage.uncovered)
    assert report.validation.status == "passed", report.validation.reason
    assert (report.training is not None) == program.train
    low, high = program.ratio
    ratio = report.flops / _xla_flops(report.frontend.notes)
    assert low <= ratio <= high, ratio
    names = [k.name for k in report.archs[0].kernels]
    # named from the source: no kernel is only a primitive's name where a loop made it
    assert not {"scan", "while"} & set(names)
