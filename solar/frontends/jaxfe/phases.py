"""Training-step phases of a jaxpr: which equations are forward, backward and optimizer.

Contract: ``jaxpr -> {equation path: Phase}`` (empty when the program takes no gradient),
a pure function over jax's jaxpr objects read by attribute (no jax import). The
equation paths are the lowering's (`solar.frontends.jaxfe.driver`): ``(n,)`` for the
``n``-th equation of the top-level jaxpr, ``(n, m)`` for the ``m``-th equation of the
body the driver inlines in place of call ``n`` (`solar.frontends.jaxfe.walk.inline_body`),
and so on; equations of loop and branch bodies belong to their loop or branch.

Note [JAX step phases]: a JAX training step is one function (``jax.value_and_grad`` /
``jax.grad`` / ``jax.vjp`` of a loss, then an update), so its jaxpr has no phase
markers of its own; autodiff leaves two in every equation's name stack, which jax
builds as it traces (``source_info.name_stack``): the equations of the linearised
forward are traced under a ``jvp`` transform (the primal values *and* the derivative
residuals autodiff keeps for the backward, e.g. ``1 - tanh(x)**2``), and the equations
autodiff's transpose emits (the backward, including rematerialised forward work under
``jax.checkpoint`` and the bodies of ``custom_vjp`` backward rules) carry a
``transpose`` transform. Call bodies (``pjit``, ``custom_jvp_call``...) record stacks
relative to their call, so the transforms accumulate along the path. The rest of the
program, outside autodiff, is split by data flow:

* **optimizer**: an equation that reads a gradient (a value the backward produced) or
  the optimizer's state (a program input no autodiff equation depends on: optax's
  moments, momentum buffers and step count), transitively (learning-rate schedules,
  bias corrections, gradient clipping and the update itself); and an equation with no
  such input whose every consumer is an optimizer equation (``optax.init`` of
  ``zeros_like`` state inside the step).
* **forward**: everything else: work before the gradient call that feeds it (casting
  or normalising a batch), and values computed after it from forward values only
  (metrics of ``has_aux`` outputs).

The rules name no library: plain jax, Flax (linen, nnx) and any optax chain give the
same markers. A program with no ``transpose`` equation takes no gradient and gets no
phases. A function that runs several steps (two ``value_and_grad`` calls) has each
phase's equations of every step in that phase; an equation that both reads a gradient
and feeds a later forward counts as optimizer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from solar.frontends.jaxfe.walk import inline_args, inline_body, is_var
from solar.training import Phase

__all__ = ["AD_BACKWARD", "AD_FORWARD", "step_phases"]

AD_BACKWARD = frozenset({"transpose"})
"""Name-stack transforms of equations autodiff's transpose emitted (the backward)."""

AD_FORWARD = frozenset({"jvp"})
"""Name-stack transforms of the linearised forward (primal values and residuals;
``jax.linearize`` traces under ``jvp`` too, jax 0.10)."""

_ValueId = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class _Eqn:
    """One equation the lowering emits kernels for, flattened out of its calls."""

    path: tuple[int, ...]
    transforms: frozenset[str]
    reads: tuple[_ValueId, ...]
    writes: tuple[_ValueId, ...]


def _transforms(eqn: Any) -> tuple[str, ...]:
    """Names of the transforms on ``eqn``'s own name stack (``("transpose", "jvp")``)."""
    stack = getattr(getattr(eqn.source_info, "name_stack", None), "stack", ())
    return tuple(str(s.name) for s in stack if type(s).__name__ == "Transform")


def _flatten(
    jaxpr: Any,
    env: dict[Any, _ValueId],
    path: tuple[int, ...],
    outer: frozenset[str],
    out: list[_Eqn],
) -> list[_ValueId | None]:
    """Append the equations of ``jaxpr`` (calls inlined) to ``out``; its outputs' ids."""
    for n, eqn in enumerate(jaxpr.eqns):
        here = (*path, n)
        transforms = outer | frozenset(_transforms(eqn))
        reads = tuple(env[a] for a in eqn.invars if is_var(a) and a in env)
        body = inline_body(eqn)
        if body is None:
            writes = tuple((*here, k) for k in range(len(eqn.outvars)))
            out.append(_Eqn(here, transforms, reads, writes))
            for v, w in zip(eqn.outvars, writes, strict=True):
                if is_var(v):
                    env[v] = w
            continue
        inner, consts = body
        args = inline_args(eqn, [env.get(a) if is_var(a) else None for a in eqn.invars])
        inner_env: dict[Any, _ValueId] = {}
        for k, v in enumerate(inner.constvars[: len(consts)]):
            inner_env[v] = ("const", *here, k)
        for v, a in zip(inner.invars, args, strict=True):
            if a is not None:
                inner_env[v] = a
        results = _flatten(inner, inner_env, here, transforms, out)
        for v, r in zip(eqn.outvars, results, strict=True):
            if is_var(v) and r is not None:
                env[v] = r
    return [env.get(v) if is_var(v) else None for v in jaxpr.outvars]


def step_phases(jaxpr: Any) -> dict[tuple[int, ...], Phase]:
    """The phase of every equation of a training step (Note [JAX step phases]).

    Args:
        jaxpr: the program's (open) jaxpr; its inputs are the step's parameters, data
            and optimizer state.

    Returns:
        ``{equation path: phase}``, or ``{}`` when no equation comes from autodiff's
        transpose (the program takes no gradient).
    """
    env: dict[Any, _ValueId] = {v: ("in", k) for k, v in enumerate(jaxpr.invars)}
    env.update({v: ("const", k) for k, v in enumerate(jaxpr.constvars)})
    eqns: list[_Eqn] = []
    _flatten(jaxpr, env, (), frozenset(), eqns)
    if not any(e.transforms & AD_BACKWARD for e in eqns):
        return {}
    phases: dict[tuple[int, ...], Phase] = {}
    plain: list[_Eqn] = []
    for e in eqns:
        if e.transforms & AD_BACKWARD:
            phases[e.path] = "backward"
        elif e.transforms & AD_FORWARD:
            phases[e.path] = "forward"
        else:
            plain.append(e)
    feeds_ad = _feeding_autodiff(eqns)
    inputs = {("in", k) for k in range(len(jaxpr.invars))}
    seeds = {w for e in eqns if e.transforms & AD_BACKWARD for w in e.writes}
    seeds |= inputs - feeds_ad  # optimizer state: inputs autodiff does not depend on
    for e in plain:  # in program order: reading a gradient or the state, transitively
        if any(r in seeds for r in e.reads):
            phases[e.path] = "optimizer"
            seeds.update(e.writes)
    consumers = _consumers(eqns)
    for e in reversed(plain):  # consumers come later: decided before their producers
        if e.path in phases:
            continue
        users = [p for w in e.writes for p in consumers.get(w, ())]
        only_update = bool(users) and all(phases.get(p) == "optimizer" for p in users)
        phases[e.path] = "optimizer" if only_update and not feeds_ad & set(e.writes) else "forward"
    return phases


def _feeding_autodiff(eqns: Sequence[_Eqn]) -> set[_ValueId]:
    """The values some autodiff equation depends on (transitively)."""
    needed: set[_ValueId] = set()
    for e in reversed(eqns):
        if e.transforms & (AD_BACKWARD | AD_FORWARD) or needed & set(e.writes):
            needed.update(e.reads)
    return needed


def _consumers(eqns: Sequence[_Eqn]) -> Mapping[_ValueId, list[tuple[int, ...]]]:
    users: dict[_ValueId, list[tuple[int, ...]]] = {}
    for e in eqns:
        for r in e.reads:
            users.setdefault(r, []).append(e.path)
    return users
