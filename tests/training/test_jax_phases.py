"""JAX training-step phases (Note [JAX step phases] in solar/frontends/jaxfe/phases.py):
which kernels are forward, backward and optimizer, and the phases' bounds and memory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from solar.diagnostics import UsageError
from solar.pipeline import AnalyzeOptions, analyze
from solar.training import Phase, phase_of_kernel

jax = pytest.importorskip("jax")
optax = pytest.importorskip("optax")
pytestmark = pytest.mark.jax

jnp = jax.numpy
SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "jax"


def _phases(fn: Callable[..., Any], *inputs: Any) -> dict[str, Phase]:
    """``{kernel name: phase}`` of ``fn``'s lowered program (alias kernels left out)."""
    from solar.frontends.jaxfe import lower_jaxpr, trace_function

    lowered = lower_jaxpr(trace_function(fn, inputs))
    return {k.name: phase_of_kernel(k.name) for k in lowered.program.kernels if not k.alias}


def _by_phase(phases: dict[str, Phase]) -> dict[Phase, list[str]]:
    out: dict[Phase, list[str]] = {}
    for name, phase in phases.items():
        out.setdefault(phase, []).append(name)
    return out


def _mlp() -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((4, 3), dtype=np.float32),
              "b": rng.standard_normal((3,), dtype=np.float32)}
    return params, rng.standard_normal((2, 4), dtype=np.float32)


def _loss(p: Any, x: Any) -> Any:
    return jnp.sum(jnp.tanh(x @ p["w"] + p["b"]) ** 2)


def test_no_gradient_no_phases() -> None:
    params, x = _mlp()
    assert set(_phases(_loss, params, x).values()) == {"forward"}


def test_gradient_alone_has_forward_and_backward() -> None:
    params, x = _mlp()
    by = _by_phase(_phases(jax.grad(_loss), params, x))
    assert set(by) == {"forward", "backward"}
    assert any("dot_general" in n for n in by["forward"])
    # dW = x^T g (the input needs no gradient: one backward matmul)
    assert sum("dot_general" in n for n in by["backward"]) == 1


@pytest.mark.parametrize("jit", [False, True])
def test_sgd_step_in_three_phases(jit: bool) -> None:
    """A hand-written update after ``value_and_grad``; jitting the step changes nothing."""

    def step(p: Any, x: Any) -> Any:
        loss, g = jax.value_and_grad(_loss)(p, x)
        return loss, jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)

    params, x = _mlp()
    by = _by_phase(_phases(jax.jit(step) if jit else step, params, x))
    assert set(by) == {"forward", "backward", "optimizer"}
    assert len(by["optimizer"]) == 4  # mul and sub per parameter


def test_adam_state_schedule_and_metrics() -> None:
    """optax.adam: the step count, the bias corrections and the moments are the
    optimizer's; a ``has_aux`` metric of the forward stays in the forward; work that
    prepares the batch before the gradient is forward."""
    opt = optax.adam(1e-3)

    def step(p: Any, state: Any, x: Any) -> Any:
        x = x * 2.0  # preprocessing the batch
        def loss(q: Any) -> Any:
            y = jnp.tanh(x @ q["w"] + q["b"])
            return jnp.sum(y**2), jnp.max(y)

        (value, peak), g = jax.value_and_grad(loss, has_aux=True)(p)
        metric = peak * 3.0  # after the gradient, from forward values only
        updates, state = opt.update(g, state, p)
        return value, metric, optax.apply_updates(p, updates), state

    params, x = _mlp()
    phases = _phases(step, params, opt.init(params), x)
    by = _by_phase(phases)
    assert set(by) == {"forward", "backward", "optimizer"}
    assert phases["mul"] == "forward"  # x * 2.0, the first kernel
    assert sum(n.startswith("optimizer_sqrt") for n in by["optimizer"]) == 2
    # the step count's increment reads only the state: optimizer
    assert any(n.startswith("optimizer_add") for n in by["optimizer"])
    # named from `loss`, the user function that made it (Note [JAX kernel names])
    assert any(n.startswith(("loss_reduce_max", "loss_max")) for n in by["forward"])
    assert not any("reduce_max" in n for n in by["optimizer"])


def test_optimizer_state_built_inside_the_step() -> None:
    """``opt.init`` inside the step (momentum zeros): the fill feeds only the update."""
    opt = optax.sgd(0.1, momentum=0.9)

    def step(p: Any, x: Any) -> Any:
        g = jax.grad(_loss)(p, x)
        updates, _ = opt.update(g, opt.init(p), p)
        return optax.apply_updates(p, updates)

    params, x = _mlp()
    by = _by_phase(_phases(step, params, x))
    assert set(by) == {"forward", "backward", "optimizer"}


def test_checkpointed_forward_is_recomputed_in_the_backward() -> None:
    params, x = _mlp()

    def loss(p: Any, x: Any) -> Any:
        return jnp.sum(jax.checkpoint(lambda q: jnp.sin(x @ q["w"]))(p))

    by = _by_phase(_phases(jax.value_and_grad(loss), params, x))
    assert any("sin" in n for n in by["forward"])  # for the loss
    # x @ w recomputed for the derivative cos(x @ w), then dW
    assert sum("dot_general" in n for n in by["backward"]) == 2


def _report(name: str, **kw: Any) -> Any:
    return analyze(SAMPLES / f"{name}.py", AnalyzeOptions(cache="cold", train_step=True, **kw))


@pytest.mark.parametrize("name", ["train_mlp", "train_cnn"])
def test_phases_add_up_to_the_step(name: str) -> None:
    r = _report(name)
    assert r.validation.status == "passed"
    t = r.training
    assert t is not None
    assert [p.phase for p in t.phases] == ["forward", "backward", "optimizer"]
    assert sum(p.flops for p in t.phases) == r.flops
    assert r.fused_dram_bytes <= sum(p.fused_dram_bytes for p in t.phases)
    for arch in range(len(r.archs)):
        step = {b.model: b.time_s for b in r.archs[arch].bounds}
        for model in ("unfused", "fused", "cache-aware"):
            total = sum(
                next(b.time_s for b in p.archs[arch].bounds if b.model == model) for p in t.phases
            )
            assert step[model] <= total * (1 + 1e-9)


def test_memory_of_an_adamw_step() -> None:
    """Parameters and optimizer state are inputs of a JAX step; the update tells them apart."""
    r = _report("train_mlp")
    t = r.training
    assert t is not None
    n = 64 * 128 + 128 + 128 * 10 + 10
    assert t.parameter_bytes == 4 * n
    assert t.optimizer_state_bytes == 4 * 2 * n + 4  # two moments and the step count
    assert t.gradient_bytes == 4 * n
    assert t.input_bytes == 4 * 32 * 64 + 4 * 32  # the batch and its int32 labels
    assert t.saved_activation_bytes > 0
    assert t.peak_bytes >= t.parameter_bytes + t.optimizer_state_bytes


def test_train_without_a_gradient_stops_instead_of_bounding_the_forward(tmp_path: Path) -> None:
    src = tmp_path / "plain.py"
    src.write_text(
        "import jax.numpy as jnp\nimport numpy as np\n\n"
        "def f(x):\n    return jnp.tanh(x)\n\n"
        "def get_inputs():\n    return [np.ones((4, 4), np.float32)]\n"
    )
    with pytest.raises(UsageError, match="takes no gradient") as err:
        analyze(src, AnalyzeOptions(train_step=True))
    assert err.value.code == "E0916"


def test_gradient_without_train_is_bounded_as_a_whole() -> None:
    r = analyze(SAMPLES / "train_mlp_sgd.py", AnalyzeOptions(cache="cold"))
    assert r.training is None


def _kernel_names(report: Any) -> Sequence[str]:
    return [k.name for k in report.archs[0].kernels]


def test_gradient_without_update() -> None:
    r = _report("cnn_grad_step")
    t = r.training
    assert t is not None
    assert [p.phase for p in t.phases] == ["forward", "backward"]
    assert t.optimizer_state_bytes == 0
    assert any(n.startswith("backward_") for n in _kernel_names(r))


def test_flax_nnx_step_with_an_optax_chain() -> None:
    """nnx split/merge around ``jax.value_and_grad``; gradient clipping is the optimizer's."""
    nnx = pytest.importorskip("flax.nnx")

    class MLP(nnx.Module):  # type: ignore[misc]
        def __init__(self, rngs: Any) -> None:
            self.l1 = nnx.Linear(4, 8, rngs=rngs)
            self.l2 = nnx.Linear(8, 2, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            return self.l2(nnx.relu(self.l1(x)))

    graphdef, params = nnx.split(MLP(nnx.Rngs(0)), nnx.Param)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3))

    def step(p: Any, state: Any, x: Any, y: Any) -> Any:
        def loss(q: Any) -> Any:
            return jnp.mean((nnx.merge(graphdef, q)(x) - y) ** 2)

        value, g = jax.value_and_grad(loss)(p)
        updates, state = opt.update(g, state, p)
        return value, optax.apply_updates(p, updates), state

    x, y = np.ones((3, 4), np.float32), np.ones((3, 2), np.float32)
    by = _by_phase(_phases(step, params, opt.init(params), x, y))
    # from `loss`, the user's `MLP` and the nnx.Linear it called (Note [JAX kernel names])
    assert sum(n.startswith("loss_MLP_Linear_dot_general") for n in by["forward"]) == 2
    assert sum("dot_general" in n for n in by["backward"]) == 3  # dW2, dX2, dW1
    assert any(n.startswith("optimizer_sqrt") for n in by["optimizer"])  # the global norm
    assert not any("dot_general" in n for n in by["optimizer"])
