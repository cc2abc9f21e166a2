"""Jaxpr walking helpers: call inlining, liveness, last uses and kernel-name scopes.

Contract: pure functions over jax's jaxpr objects, read by attribute (no jax import), so
the lowering (`solar.frontends.jaxfe.driver`) and the reference interpreter
(`solar.frontends.jaxfe.reference`) inline exactly the same equations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "INLINE_PRIMITIVES",
    "inline_args",
    "inline_body",
    "is_var",
    "last_uses",
    "live_equations",
    "sanitize_scope",
]

INLINE_PRIMITIVES = frozenset(
    {
        "pjit",
        "jit",
        "closed_call",
        "core_call",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "remat",
        "remat2",
        "checkpoint",
        "name",
        "custom_linear_solve",
    }
)
"""Call-like primitives whose body is lowered in place of the call (``custom_linear_solve``:
its ``solve`` jaxpr, on the solve constants and the right-hand sides; see `inline_args`)."""


def sanitize_scope(stack: str, strip_root: bool, sep: str = "_") -> str:
    """A kernel-name prefix from a jax name stack (``"Model/Dense_0"`` -> ``"Dense_0"``).

    Parts that are not identifiers (``jnp.einsum``'s ``bi,oi->bo``, ``jvp(...)``) are dropped.

    >>> sanitize_scope("Model/Dense_0", True), sanitize_scope("bi,oi->bo", False)
    ('Dense_0', '')
    """
    parts = [p for p in stack.split("/") if p.isidentifier()]
    if strip_root and parts:
        parts = parts[1:]
    return sep.join(parts)


def inline_body(eqn: Any) -> tuple[Any, Sequence[Any]] | None:
    """``(jaxpr, consts)`` of a call-like equation to inline, else ``None``."""
    if eqn.primitive.name not in INLINE_PRIMITIVES:
        return None
    if eqn.primitive.name == "custom_linear_solve":
        solve = eqn.params["jaxprs"].solve
        return solve.jaxpr, list(solve.consts)
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        body = eqn.params.get(key)
        if body is None:
            continue
        if hasattr(body, "consts"):
            return body.jaxpr, list(body.consts)
        return body, []
    return None


def inline_args(eqn: Any, ins: Sequence[Any]) -> list[Any]:
    """The arguments of an inlined body among the equation's inputs.

    ``custom_linear_solve`` takes the constants of its four jaxprs (``matvec``,
    ``vecmat``, ``solve``, ``transpose_solve``) then the right-hand sides; its forward
    value is ``solve(*solve_consts, *b)``. Other calls pass every input.
    """
    if eqn.primitive.name != "custom_linear_solve":
        return list(ins)
    n = eqn.params["const_lengths"]
    start = n.matvec + n.vecmat
    end = start + n.solve + n.transpose_solve
    return [*ins[start : start + n.solve], *ins[end:]]


def is_var(atom: Any) -> bool:
    """True for a jaxpr variable (not a literal, not a dropped output)."""
    return type(atom).__name__ == "Var"


def live_equations(jaxpr: Any, live_out: Sequence[bool]) -> tuple[set[int], set[Any]]:
    """Indices of equations whose results are needed, and the live variables."""
    live: set[Any] = {
        v for v, keep in zip(jaxpr.outvars, live_out, strict=True) if keep and is_var(v)
    }
    needed: set[int] = set()
    for n in range(len(jaxpr.eqns) - 1, -1, -1):
        eqn = jaxpr.eqns[n]
        if any(v in live for v in eqn.outvars if is_var(v)):
            needed.add(n)
            live.update(v for v in eqn.invars if is_var(v))
    return needed, live


def last_uses(jaxpr: Any, pinned: Sequence[Any]) -> dict[Any, int]:
    """Index of the last equation reading each variable (outputs and pinned: never)."""
    last: dict[Any, int] = {}
    for n, eqn in enumerate(jaxpr.eqns):
        for v in eqn.invars:
            if is_var(v):
                last[v] = n
    end = len(jaxpr.eqns) + 1
    for v in [*jaxpr.outvars, *pinned]:
        if is_var(v):
            last[v] = end
    return last
