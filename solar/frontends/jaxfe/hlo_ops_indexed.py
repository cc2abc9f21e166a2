"""Replays of the HLO ops with dimension numbers: gather, scatter, convolution, sort.

Contract: registers handlers in `solar.frontends.jaxfe.hlo_replay`'s table (imported by
`replay_entry`); each maps the HLO attributes to the ``lax`` call XLA lowers back to the
same op (``mode=PROMISE_IN_BOUNDS``: the HLO's own clamping / dropping of out-of-bounds
indices, no extra ops). A scatter or sort whose computation is not one the handlers
recognise is E0571, like any unmapped op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from solar.frontends.jaxfe.hlo_parse import Computation, Group, Instruction, Keyed, Value, ints
from solar.frontends.jaxfe.hlo_replay import (
    Replayer,
    array_type,
    jax_dtype,
    monoid,
    register,
    unmapped,
)

__all__: list[str] = []


def _indices_last(indices: Any, vector_dim: int) -> tuple[Any, int]:
    """``indices`` with its index vector as the last dimension (lax's layout), and the
    dimension it was at."""
    from jax import lax

    nd = np.ndim(indices)
    if vector_dim == nd:
        return lax.expand_dims(indices, (nd,)), vector_dim
    if vector_dim != nd - 1:
        perm = [d for d in range(nd) if d != vector_dim] + [vector_dim]
        return lax.transpose(indices, perm), vector_dim
    return indices, vector_dim


def _renumber(dims: Sequence[int], removed: int) -> tuple[int, ...]:
    return tuple(d - 1 if d > removed else d for d in dims)


@register("gather")
def _gather(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    from jax import lax

    a = i.attrs
    (vector_dim,) = ints(a.get("index_vector_dim"))
    indices, removed = _indices_last(ops[1], vector_dim)
    dnums = lax.GatherDimensionNumbers(
        offset_dims=ints(a.get("offset_dims")),
        collapsed_slice_dims=ints(a.get("collapsed_slice_dims")),
        start_index_map=ints(a.get("start_index_map")),
        operand_batching_dims=ints(a.get("operand_batching_dims")),
        start_indices_batching_dims=_renumber(ints(a.get("start_indices_batching_dims")),
                                              removed),
    )
    return lax.gather(ops[0], indices, dnums, ints(a.get("slice_sizes")),
                      indices_are_sorted=str(a.get("indices_are_sorted")) == "true",
                      mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _assigns(r: Replayer, i: Instruction) -> bool:
    comp = r.computation(i.attrs.get("to_apply"), i)
    root = comp.root
    return root.opcode == "parameter" and ints(root.literal) == (1,)


@register("scatter")
def _scatter(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    from jax import lax

    if len(ops) != 3:
        raise unmapped(i, f" of {(len(ops) - 1) // 2} operands")
    a = i.attrs
    op = "assign" if _assigns(r, i) else monoid(r.computation(a.get("to_apply"), i))
    fn = {"assign": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul,
          "max": lax.scatter_max, "min": lax.scatter_min}.get(op or "")
    if fn is None:
        raise unmapped(i, " with a computation other than assign/add/mul/max/min")
    (vector_dim,) = ints(a.get("index_vector_dim"))
    indices, removed = _indices_last(ops[1], vector_dim)
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=ints(a.get("update_window_dims")),
        inserted_window_dims=ints(a.get("inserted_window_dims")),
        scatter_dims_to_operand_dims=ints(a.get("scatter_dims_to_operand_dims")),
        operand_batching_dims=ints(a.get("operand_batching_dims")),
        scatter_indices_batching_dims=_renumber(
            ints(a.get("scatter_indices_batching_dims")), removed),
    )
    return fn(ops[0], indices, ops[2], dnums,
              indices_are_sorted=str(a.get("indices_are_sorted")) == "true",
              unique_indices=str(a.get("unique_indices")) == "true",
              mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _window(value: Value | None, n: int) -> dict[str, list[tuple[int, ...]]]:
    """``window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=..}`` per
    spatial dimension (defaults: 1, no padding)."""
    one: list[tuple[int, ...]] = [(1,)] * n
    fields: dict[str, list[tuple[int, ...]]] = {
        "size": one, "stride": one, "pad": [(0, 0)] * n, "lhs_dilate": one,
        "rhs_dilate": one}
    for item in value.items if isinstance(value, Group) else ():
        if isinstance(item, Keyed) and item.key in fields and isinstance(item.value, str):
            fields[item.key] = [tuple(int(x) for x in d.split("_"))
                                for d in item.value.split("x")]
    return fields


def _spec(labels: str, first: str, second: str) -> tuple[int, ...]:
    """lax's ``(first, second, spatial...)`` dimension order from HLO labels."""
    spatial = sorted((c for c in labels if c.isdigit()), key=int)
    return tuple(labels.index(c) for c in (first, second, *spatial))


@register("convolution")
def _convolution(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    from jax import lax

    a = i.attrs
    labels = str(a.get("dim_labels", ""))
    try:
        lhs_l, rest = labels.split("_", 1)
        rhs_l, out_l = rest.split("->", 1)
        dnums = lax.ConvDimensionNumbers(_spec(lhs_l, "b", "f"), _spec(rhs_l, "o", "i"),
                                         _spec(out_l, "b", "f"))
    except ValueError:
        raise unmapped(i, f" with dim_labels={labels}") from None
    n = sum(c.isdigit() for c in lhs_l)
    w = _window(a.get("window"), n)
    if str(a.get("window", "")).find("rev") >= 0:
        raise unmapped(i, " with window reversal")
    groups = {k: ints(a.get(k))[0] if k in a else 1
              for k in ("feature_group_count", "batch_group_count")}
    return lax.conv_general_dilated(
        ops[0], ops[1], [s[0] for s in w["stride"]], [(p[0], p[1]) for p in w["pad"]],
        [d[0] for d in w["lhs_dilate"]], [d[0] for d in w["rhs_dilate"]], dnums,
        feature_group_count=groups["feature_group_count"],
        batch_group_count=groups["batch_group_count"],
        preferred_element_type=jax_dtype(array_type(i.type)))


def _parameters_of(comp: Computation, name: str) -> set[int]:
    """The parameter numbers the value ``name`` of ``comp`` depends on."""
    by_name = {x.name: x for x in comp.instructions}
    found: set[int] = set()
    todo, seen = [name], set()
    while todo:
        x = by_name.get(todo.pop())
        if x is None or x.name in seen:
            continue
        seen.add(x.name)
        if x.opcode == "parameter":
            found.update(ints(x.literal))
        todo.extend(x.operands)
    return found


@register("sort")
def _sort(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    """A sort whose comparator compares (after any canonicalisation of each side, as
    lax.sort writes for floats) parameter 0 with parameter 1: ``LT`` ascending on the
    first operand, the others carried along; ``GT`` of one operand descending."""
    from jax import lax

    comp = r.computation(i.attrs.get("to_apply"), i)
    root = comp.root
    direction = str(root.attrs.get("direction"))
    sides = [_parameters_of(comp, o) for o in root.operands]
    if root.opcode != "compare" or sides != [{0}, {1}] or direction not in ("LT", "GT") or (
            direction == "GT" and len(ops) != 1):
        raise unmapped(i, " with a comparator other than one on the first operand")
    (dim,) = ints(i.attrs.get("dimensions"))
    stable = str(i.attrs.get("is_stable")) == "true"
    out = lax.sort(tuple(ops), dimension=dim, is_stable=stable, num_keys=1)
    if direction == "GT":
        return lax.rev(out[0], (dim,))
    return tuple(out) if len(ops) > 1 else out[0]
