"""Replay one device's HLO (after SPMD partitioning) as a Python function of lax calls.

Contract: ``(HloModule, mesh axes) -> per-device function`` (`hlo_device.replay_entry`,
with every handler registered: this module's and `hlo_ops_indexed`'s): the
function takes the ENTRY computation's parameters (in parameter order) and returns its
outputs (a ROOT tuple flattened), calling ``jax.lax`` once per HLO instruction the ROOT
depends on. It must run inside ``shard_map`` over a mesh with those axes: partition
``p`` is the device at mesh coordinates ``np.unravel_index(p, mesh shape)``, so a
collective's replica groups become the mesh axes whose groups they are (`mesh_axes_of`)
and ``partition-id`` is ``sum(axis_index(a) * stride(a))``. Each instruction's jax
equations carry the user's source line from the HLO metadata (Note [HLO sources]).

Errors (FrontendError): E0571 an instruction the replay does not map (named, with its
line; never replayed as nothing), E0551 replica groups that are no mesh axes, E0570
malformed HLO. A collective-permute that moves along no single mesh axis is replayed
over all axes (the shard_map lowering reports it uncovered).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Sequence
from math import prod
from typing import Any

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe.hlo_mesh import Mesh, mesh_axes_of, permute_axes, u32_is_index_math
from solar.frontends.jaxfe.hlo_parse import (
    ArrayType,
    Computation,
    HloModule,
    HloType,
    Instruction,
    Ref,
    TupleType,
    Value,
    ints,
    literal_values,
    replica_groups,
    slice_bounds,
)

__all__ = [
    "OPS",
    "Replayer",
    "array_type",
    "jax_dtype",
    "monoid",
    "register",
    "unmapped",
]

# Note [HLO sources]
# ~~~~~~~~~~~~~~~~~~
# SOLAR names a kernel's source from the traceback jax records with each equation
# (solar.frontends.jaxfe.sources). Replayed equations are made here, so each lax call is
# made from a one-line function compiled with the user's file name and line number
# (from the HLO's stack_frame_id), the way template engines point tracebacks at their
# templates: the innermost user frame of the equation is then the user's own line.


def _call_frame(fn: Callable[..., Any], a: Sequence[Any]) -> Any:
    return fn(*a)


@functools.cache
def _caller_at(file: str, line: int, function: str) -> Callable[..., Any]:
    """`_call_frame` with its code object renamed to the user's file, line and function (no
    text is compiled: the HLO's metadata only names the frame)."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in function) or "_hlo"
    if not name.isidentifier():
        name = f"_{name}"
    code = _call_frame.__code__.replace(co_filename=file, co_firstlineno=max(0, line - 1),
                                  co_name=name, co_qualname=name)
    return types.FunctionType(code, _call_frame.__globals__, name)


def _dtype(name: str) -> Any:
    import jax.numpy as jnp

    table = {"pred": jnp.bool_, "bf16": jnp.bfloat16}
    if name in table:
        return table[name]
    if name.startswith("f8") or name.startswith("f4"):
        return getattr(jnp, "float" + name[1:], None) or _unmapped_type(name)
    kind = {"s": "int", "u": "uint", "f": "float", "c": "complex"}.get(name[0])
    if kind is None or not name[1:].isdigit():
        return _unmapped_type(name)
    return getattr(jnp, f"{kind}{name[1:]}")


def _unmapped_type(name: str) -> Any:
    raise FrontendError(f"HLO element type `{name}` has no JAX dtype", code="E0571")


def array_type(t: HloType) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise FrontendError(f"expected an array type, found {t}", code="E0570")
    return t


_MONOIDS = {"add": "add", "maximum": "max", "minimum": "min", "multiply": "mul",
            "and": "and", "or": "or"}


def monoid(comp: Computation) -> str | None:
    """``add``/``max``/... when ``comp`` is one binary op of its two parameters."""
    root = comp.root
    params = {i.name for i in comp.instructions if i.opcode == "parameter"}
    if len(comp.params) == 2 and len(root.operands) == 2 and set(root.operands) == params:
        return _MONOIDS.get(root.opcode)
    return None


def unmapped(instr: Instruction, what: str = "") -> FrontendError:
    where = f" at {instr.source.file.rsplit('/', 1)[-1]}:{instr.source.line}" if (
        instr.source) else ""
    return FrontendError(
        f"HLO `{instr.opcode}`{what} (instruction %{instr.name}{where}) has no replay in "
        "SOLAR's jit capture",
        code="E0571",
        span=instr.span,
        notes=("the per-device program is read from XLA's HLO after SPMD partitioning; "
               "write that part with jax.shard_map, or report the opcode",),
    )


class Replayer:
    """Evaluates computations of one module with lax calls (inside a shard_map)."""

    def __init__(self, module: HloModule, mesh: Mesh) -> None:
        self.module = module
        self.mesh = tuple(mesh)
        self.world = prod(s for _, s in mesh)
        self.u32_as_s32 = u32_is_index_math(module)

    def dtype(self, name: str) -> Any:
        """The JAX dtype of HLO element type ``name`` in this replay (Note [u32 indices]
        in hlo_mesh.py)."""
        return _dtype("s32" if name == "u32" and self.u32_as_s32 else name)

    def computation(self, value: Value | None, instr: Instruction) -> Computation:
        if not isinstance(value, Ref) or value.name not in self.module.computations:
            raise FrontendError(f"%{instr.name} names no computation ({value})", code="E0570",
                                span=instr.span)
        return self.module.computations[value.name]

    def run(self, comp: Computation, args: Sequence[Any]) -> Any:
        needed = _reachable(comp)
        env: dict[str, Any] = {}
        for instr in comp.instructions:
            if instr.name not in needed:
                continue
            try:
                ops = [env[o] for o in instr.operands]
            except KeyError as err:
                raise FrontendError(f"%{instr.name} uses %{err.args[0]} before it is defined",
                                    code="E0570", span=instr.span) from None
            handler = OPS.get(instr.opcode)
            if handler is None:
                raise unmapped(instr)
            src = instr.source
            if src is not None and src.line > 0:
                env[instr.name] = _caller_at(src.file, src.line, src.function)(
                    handler, (self, instr, ops, args))
            else:
                env[instr.name] = handler(self, instr, ops, args)
        return env[comp.root.name]

    def axes(self, instr: Instruction, *, ordered: bool) -> tuple[str, ...]:
        if "channel_id" not in instr.attrs:
            raise unmapped(instr, " across replicas (no channel_id)")
        groups = replica_groups(instr.attrs.get("replica_groups"), self.world)
        return mesh_axes_of(groups, self.mesh, ordered=ordered)

    def partition_id(self) -> Any:
        from jax import lax

        index: Any = np.int32(0)
        stride = 1
        for name, size in reversed(self.mesh):
            if size > 1:
                index = lax.add(index, lax.mul(lax.axis_index(name), np.int32(stride)))
            stride *= size
        return index


def _reachable(comp: Computation) -> set[str]:
    by_name = {i.name: i for i in comp.instructions}
    seen: set[str] = set()
    todo = [comp.root.name]
    while todo:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        todo.extend(by_name[name].operands)
    return seen


Handler = Callable[[Replayer, Instruction, list[Any], Sequence[Any]], Any]
OPS: dict[str, Handler] = {}
"""The replay's handlers by HLO opcode (filled by `register`)."""


def register(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            OPS[name] = fn
        return fn

    return register


def _lax() -> Any:
    from jax import lax

    return lax


_UNARY = {
    "abs": "abs", "negate": "neg", "exponential": "exp", "log": "log",
    "log-plus-one": "log1p", "exponential-minus-one": "expm1", "tanh": "tanh",
    "logistic": "logistic", "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "sine": "sin",
    "cosine": "cos", "tan": "tan", "floor": "floor", "ceil": "ceil", "sign": "sign",
    "not": "bitwise_not", "is-finite": "is_finite", "erf": "erf",
    "popcnt": "population_count", "count-leading-zeros": "clz",
}
_BINARY = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "maximum": "max",
    "minimum": "min", "power": "pow", "remainder": "rem", "and": "bitwise_and",
    "or": "bitwise_or", "xor": "bitwise_xor", "atan2": "atan2", "shift-left": "shift_left",
    "shift-right-logical": "shift_right_logical",
    "shift-right-arithmetic": "shift_right_arithmetic",
}
_COMPARE = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}


@register(*_UNARY)
def _unary(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return getattr(_lax(), _UNARY[i.opcode])(ops[0])


@register(*_BINARY)
def _binary(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return getattr(_lax(), _BINARY[i.opcode])(ops[0], ops[1])


@register("round-nearest-afz", "round-nearest-even")
def _round(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    lax = _lax()
    even = i.opcode == "round-nearest-even"
    method = lax.RoundingMethod.TO_NEAREST_EVEN if even else lax.RoundingMethod.AWAY_FROM_ZERO
    return lax.round(ops[0], method)


@register("copy", "optimization-barrier")
def _identity(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return ops[0]


@register("parameter")
def _parameter(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    k = ints(i.literal)
    if len(k) != 1 or not 0 <= k[0] < len(args):
        raise FrontendError(f"%{i.name}: parameter {i.literal} out of range", code="E0570",
                            span=i.span)
    return args[k[0]]


@register("constant")
def _constant(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    t = array_type(i.type)
    value = np.asarray(literal_values(i.literal), dtype=r.dtype(t.dtype))
    if value.size != prod(t.dims):
        raise FrontendError(f"%{i.name}: a literal of {value.size} values for {t.dims}",
                            code="E0570", span=i.span)
    return value.reshape(t.dims)


@register("iota")
def _iota(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    t = array_type(i.type)
    (dim,) = ints(i.attrs.get("iota_dimension"))
    return _lax().broadcasted_iota(r.dtype(t.dtype), t.dims, dim)


@register("partition-id")
def _partition_id(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return _lax().convert_element_type(r.partition_id(), r.dtype(array_type(i.type).dtype))


@register("replica-id")
def _replica_id(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return np.zeros((), r.dtype(array_type(i.type).dtype))  # one replica: SPMD partitions only


@register("convert")
def _convert(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return _lax().convert_element_type(ops[0], r.dtype(array_type(i.type).dtype))


@register("bitcast-convert")
def _bitcast_convert(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    t = array_type(i.type)
    if tuple(np.shape(ops[0])) != t.dims:
        raise unmapped(i, " changing the element width")
    return _lax().bitcast_convert_type(ops[0], r.dtype(t.dtype))


@register("broadcast")
def _broadcast(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return _lax().broadcast_in_dim(ops[0], array_type(i.type).dims, ints(i.attrs.get("dimensions")))


@register("reshape")
def _reshape(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return _lax().reshape(ops[0], array_type(i.type).dims)


@register("transpose")
def _transpose(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return _lax().transpose(ops[0], ints(i.attrs.get("dimensions")))


@register("reverse")
def _reverse(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return _lax().rev(ops[0], ints(i.attrs.get("dimensions")))


@register("compare")
def _compare(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    direction = str(i.attrs.get("direction"))
    if direction not in _COMPARE:
        raise unmapped(i, f" with direction={direction}")
    return getattr(_lax(), _COMPARE[direction])(ops[0], ops[1])


@register("select")
def _select(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    lax = _lax()
    pred = ops[0]
    if np.ndim(pred) == 0 and np.ndim(ops[1]) > 0:
        pred = lax.broadcast_in_dim(pred, np.shape(ops[1]), ())
    return lax.select(pred, ops[1], ops[2])


@register("clamp")
def _clamp(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return _lax().clamp(ops[0], ops[1], ops[2])


@register("dot")
def _dot(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    a = i.attrs
    dims = ((ints(a.get("lhs_contracting_dims")), ints(a.get("rhs_contracting_dims"))),
            (ints(a.get("lhs_batch_dims")), ints(a.get("rhs_batch_dims"))))
    out = r.dtype(array_type(i.type).dtype)
    return _lax().dot_general(ops[0], ops[1], dims, preferred_element_type=out)


@register("reduce")
def _reduce(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    lax = _lax()
    comp = r.computation(i.attrs.get("to_apply"), i)
    n = len(ops) // 2
    dims = ints(i.attrs.get("dimensions"))
    op = monoid(comp)
    if n == 1 and op is not None:
        fn = getattr(lax, {"and": "bitwise_and", "or": "bitwise_or"}.get(op, op))
        return lax.reduce(ops[0], ops[1], fn, dims)
    if n == 1:
        return lax.reduce(ops[0], ops[1], lambda a, b: r.run(comp, (a, b)), dims)
    out = lax.reduce(tuple(ops[:n]), tuple(ops[n:]),
                     lambda a, b: tuple(r.run(comp, (*a, *b))), dims)
    return tuple(out)


@register("slice")
def _slice(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    bounds = slice_bounds(i.attrs.get("slice"))
    return _lax().slice(ops[0], [b.start for b in bounds], [b.stop for b in bounds],
                        [b.step for b in bounds])


@register("dynamic-slice")
def _dynamic_slice(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return _lax().dynamic_slice(ops[0], ops[1:], ints(i.attrs.get("dynamic_slice_sizes")))


@register("dynamic-update-slice")
def _dynamic_update(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return _lax().dynamic_update_slice(ops[0], ops[1], ops[2:])


@register("concatenate")
def _concatenate(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    (dim,) = ints(i.attrs.get("dimensions"))
    return _lax().concatenate(ops, dim)


@register("pad")
def _pad(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    config = []
    for dim in str(i.attrs.get("padding", "")).split("x"):
        parts = [int(p) for p in dim.split("_")]
        config.append((parts[0], parts[1], parts[2] if len(parts) > 2 else 0))
    return _lax().pad(ops[0], ops[1], config)


@register("tuple")
def _tuple(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return tuple(ops)


@register("get-tuple-element")
def _get_tuple_element(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    (index,) = ints(i.attrs.get("index"))
    return ops[0][index]


@register("call")
def _call(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    return r.run(r.computation(i.attrs.get("to_apply"), i), ops)


@register("while")
def _while(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    cond = r.computation(i.attrs.get("condition"), i)
    body = r.computation(i.attrs.get("body"), i)
    return _lax().while_loop(lambda c: r.run(cond, (c,)), lambda c: r.run(body, (c,)), ops[0])


@register("conditional")
def _conditional(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    lax = _lax()
    a = i.attrs
    if "branch_computations" in a:
        branches_v = a["branch_computations"]
        items = getattr(branches_v, "items", ())
        comps = [r.computation(v, i) for v in items]
        index = ops[0]
    else:
        comps = [r.computation(a.get("false_computation"), i),
                 r.computation(a.get("true_computation"), i)]
        index = lax.convert_element_type(ops[0], np.int32)
        ops = [ops[0], ops[2], ops[1]]  # the false branch's operand first
    fns = [functools.partial(lambda c, k, *o: r.run(c, (o[k],)), c, k)
           for k, c in enumerate(comps)]
    return lax.switch(index, fns, *ops[1:])


def _collective_op(r: Replayer, i: Instruction) -> str:
    op = monoid(r.computation(i.attrs.get("to_apply"), i))
    if op not in ("add", "max", "min"):
        raise unmapped(i, f" reducing with `{op or 'a computation'}`")
    return op


@register("all-reduce")
def _all_reduce(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    lax = _lax()
    fn = {"add": lax.psum, "max": lax.pmax, "min": lax.pmin}[_collective_op(r, i)]
    axes = r.axes(i, ordered=False)
    out = [fn(x, axes) if axes else x for x in ops]
    return tuple(out) if isinstance(i.type, TupleType) else out[0]


def _one_dim(r: Replayer, i: Instruction, ops: list[Any]) -> int:
    dims = ints(i.attrs.get("dimensions"))
    if len(ops) != 1 or len(dims) != 1:
        raise unmapped(i, f" of {len(ops)} operands")
    return dims[0]


@register("all-gather")
def _all_gather(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    dim = _one_dim(r, i, ops)
    axes = r.axes(i, ordered=True)
    return _lax().all_gather(ops[0], axes, axis=dim, tiled=True) if axes else ops[0]


@register("reduce-scatter")
def _reduce_scatter(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    dim = _one_dim(r, i, ops)
    if _collective_op(r, i) != "add":
        raise unmapped(i, " reducing with max/min")
    axes = r.axes(i, ordered=True)
    return _lax().psum_scatter(ops[0], axes, scatter_dimension=dim, tiled=True) if axes else (
        ops[0])


@register("all-to-all")
def _all_to_all(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    dim = _one_dim(r, i, ops)
    axes = r.axes(i, ordered=True)
    return _lax().all_to_all(ops[0], axes, dim, dim, tiled=True) if axes else ops[0]


@register("collective-permute")
def _collective_permute(r: Replayer, i: Instruction, ops: list[Any], args: Sequence[Any]) -> Any:
    pairs = [ints(g) for g in getattr(i.attrs.get("source_target_pairs"), "items", ())]
    if not pairs:
        return _lax().full_like(ops[0], 0)
    axis, perm = permute_axes(pairs, r.mesh, i.name, i.span)
    return _lax().ppermute(ops[0], axis, perm)


def jax_dtype(t: ArrayType) -> Any:
    """The JAX dtype of an HLO array type."""
    return _dtype(t.dtype)
