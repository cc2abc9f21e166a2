"""A ``jit`` program with ``NamedSharding`` as one device's ``shard_map`` body.

Contract: ``JaxCapture -> JitDeviceProgram`` (`capture_jit`), run where JAX sees the
program's host devices (the capture subprocess of `solar.frontends.jaxfe.distributed`).
The user's function is compiled under ``jit`` with the shardings of its own ``jit``
(when it is one call of a ``jit`` over all its inputs; XLA's propagation otherwise),
and XLA dumps the HLO right after its SPMD partitioner: each device's program, plain
ops and collectives, before fusion. `solar.frontends.jaxfe.hlo_parse` reads it and
`solar.frontends.jaxfe.hlo_replay` replays it as lax calls inside a ``shard_map`` over
the program's mesh (rebuilt in partition order: partition ``p`` is the device at mesh
coordinates ``np.unravel_index(p, shape)``, checked against the executable's device
list), so ``jax.make_jaxpr`` gives the body the ``shard_map`` path lowers and merges
per rank. `device_blocks` gives each partition's blocks of the compiled program's real
inputs and outputs, and `replay_error` the largest difference between the replay and
the compiled program on them.

Still refused (E0557): a program XLA does not partition or whose shardings name no
mesh, several meshes, a mesh of another size than ``WORLD_SIZE`` or whose devices are
not the executable's, and a per-device program with other parameters than the inputs.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe.hlo_parse import HloModule, parse_hlo
from solar.frontends.jaxfe.hlo_replay import entry_parameter_types, jax_dtype, replay_entry

__all__ = [
    "JitDeviceProgram",
    "capture_jit",
    "device_blocks",
    "jit_device_program",
    "replay_error",
]


@dataclasses.dataclass(frozen=True, slots=True)
class JitDeviceProgram:
    """One device's program of a sharded ``jit``: the closed jaxpr of the ``shard_map``
    body that replays the partitioned HLO and its abstract inputs, the mesh axes, the
    mesh in partition order, the compiled program and its devices in partition order,
    and the parsed HLO with its text."""

    body: Any
    local: tuple[Any, ...]
    mesh: tuple[tuple[str, int], ...]
    replay_mesh: Any
    compiled: Any
    devices: tuple[Any, ...]
    module: HloModule
    hlo_text: str


def _refuse(message: str, *notes: str) -> FrontendError:
    return FrontendError(message, code="E0557", notes=notes)


def _user_jit(jaxpr: Any) -> Any | None:
    """The ``jit`` equation a program consists of, when it has shardings of its own."""
    from jax.sharding import NamedSharding

    found = None
    while len(jaxpr.eqns) == 1:
        eqn = jaxpr.eqns[0]
        if list(eqn.invars) != list(jaxpr.invars) or list(eqn.outvars) != list(jaxpr.outvars):
            break
        shardings = (*eqn.params.get("in_shardings", ()), *eqn.params.get("out_shardings", ()))
        if eqn.primitive.name in ("pjit", "jit") and any(
            isinstance(s, NamedSharding) for s in shardings
        ):
            found = eqn
        inner = eqn.params.get("jaxpr")
        if inner is None:
            break
        jaxpr = getattr(inner, "jaxpr", inner)
    return found


def _jitted(capture: Any) -> Any:
    import jax
    from jax.sharding import Sharding

    eqn = _user_jit(capture.closed_jaxpr.jaxpr)
    if eqn is None:
        return jax.jit(capture.flat_fn, keep_unused=True)

    def given(shardings: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(s if isinstance(s, Sharding) else None for s in shardings)

    return jax.jit(capture.flat_fn, in_shardings=given(eqn.params["in_shardings"]),
                   out_shardings=given(eqn.params["out_shardings"]), keep_unused=True)


def _partitioned_hlo(jitted: Any, args: Sequence[Any]) -> tuple[Any, str]:
    """The compiled program and its HLO right after SPMD partitioning."""
    with tempfile.TemporaryDirectory(prefix="solar-hlo-") as tmp:
        try:
            compiled = jitted.lower(*args).compile(compiler_options={
                "xla_dump_to": tmp, "xla_dump_hlo_pass_re": "spmd-partitioning"})
        except (RuntimeError, ValueError, TypeError) as err:
            raise _refuse(f"XLA could not compile the program for its devices: {err}") from None
        dumps = sorted(glob.glob(os.path.join(tmp, "*after_spmd-partitioning*.txt")))
        if not dumps:
            raise _refuse("the program is not partitioned across devices: no jit with "
                          "NamedSharding and no shard_map over a mesh")
        with open(dumps[-1], encoding="utf-8") as f:
            return compiled, f.read()


def _mesh(compiled: Any, world: int) -> Any:
    import jax
    from jax.sharding import NamedSharding

    leaves = jax.tree.leaves((compiled.input_shardings, compiled.output_shardings))
    meshes = {id(s.mesh): s.mesh for s in leaves if isinstance(s, NamedSharding)}
    distinct = {(m.axis_names, m.devices.shape, tuple(d.id for d in m.devices.flat))
                for m in meshes.values()}
    if not distinct:
        raise _refuse("the program's inputs and outputs name no mesh (NamedSharding)",
                      "shard them with jax.jit(f, in_shardings=NamedSharding(mesh, P(...)))")
    if len(distinct) > 1:
        raise _refuse(f"the program's shardings name {len(distinct)} different meshes")
    mesh = next(iter(meshes.values()))
    if mesh.size != world:
        raise _refuse(f"the mesh has {mesh.size} devices but the file sets WORLD_SIZE = {world}")
    return mesh


def capture_jit(capture: Any, world: int) -> JitDeviceProgram:
    """One device's program of ``capture`` (a ``jit`` with ``NamedSharding``).

    Raises:
        FrontendError: E0557 (see the module doc), E0570/E0571/E0551/E0553 from the HLO.
    """
    return jit_device_program(_jitted(capture), capture.abstract_args, world)


def jit_device_program(jitted: Any, args: Sequence[Any], world: int) -> JitDeviceProgram:
    """One device's program of ``jitted`` (a ``jax.jit`` function) on ``args`` (abstract
    or concrete), on a mesh of ``world`` devices (as `capture_jit`)."""
    import jax
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    compiled, text = _partitioned_hlo(jitted, args)
    mesh = _mesh(compiled, world)
    devices = tuple(compiled.runtime_executable().local_devices())
    if {d.id for d in devices} != {d.id for d in mesh.devices.flat}:
        raise _refuse("the executable's devices are not the mesh's")
    replay_mesh = Mesh(np.array(devices, dtype=object).reshape(mesh.devices.shape),
                       mesh.axis_names)
    axes = tuple((str(n), int(s)) for n, s in zip(mesh.axis_names, mesh.devices.shape,
                                                   strict=True))
    module = parse_hlo(text, filename="<per-device HLO after spmd-partitioning>")
    params = entry_parameter_types(module)
    if len(params) != len(jax.tree.leaves(args)):
        raise _refuse(f"XLA's per-device program has {len(params)} parameters for the "
                      f"program's {len(jax.tree.leaves(args))} inputs")
    local = [jax.ShapeDtypeStruct(t.dims, jax_dtype(t)) for t in params]  # type: ignore[no-untyped-call]
    body = jax.shard_map(replay_entry(module, axes), mesh=replay_mesh,
                         in_specs=(P(),) * len(local), out_specs=P(),  # type: ignore[no-untyped-call]
                         check_vma=False)
    closed = jax.make_jaxpr(body)(*local)
    return JitDeviceProgram(_body(closed, len(local)), tuple(local), axes, replay_mesh,
                            compiled, devices, module, text)


def _body(closed: Any, n_args: int) -> Any:
    """The ``shard_map`` body of ``closed`` as a closed jaxpr over the ``n_args`` device
    inputs: the array constants shard_map passes in as leading inputs become its consts."""
    import jax.extend
    from jax._src.interpreters import partial_eval as pe

    (eqn,) = closed.jaxpr.eqns
    inner = eqn.params["jaxpr"]
    k = len(eqn.invars) - n_args
    values = dict(zip(closed.jaxpr.constvars, closed.consts, strict=True))
    consts = [values[v] if v in values else v.val  # noqa: SIM401 - a Var has no .val
              for v in eqn.invars[:k]]
    return jax.extend.core.ClosedJaxpr(pe.convert_invars_to_constvars(inner, k), consts)


def device_blocks(
    program: JitDeviceProgram, args: Sequence[Any]
) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
    """Run the compiled program (the user's ``jit``) on ``args``: per partition, the
    blocks of the inputs and of the outputs its device holds."""
    import jax

    compiled = program.compiled
    shardings = jax.tree.leaves(compiled.input_shardings[0])
    placed = [jax.device_put(a, s) for a, s in zip(args, shardings, strict=True)]
    outs = jax.tree.leaves(compiled(*placed))

    def blocks(arr: Any) -> list[np.ndarray]:
        by_device = {s.device.id: np.asarray(s.data) for s in arr.addressable_shards}
        return [by_device[d.id] for d in program.devices]

    ins = [blocks(a) for a in placed]
    got = [blocks(o) for o in outs]
    world = len(program.devices)
    return ([[b[p] for b in ins] for p in range(world)],
            [[b[p] for b in got] for p in range(world)])


def replay_error(
    program: JitDeviceProgram, ins: Sequence[Sequence[np.ndarray]],
    outs: Sequence[Sequence[np.ndarray]],
) -> float:
    """The largest absolute difference between the replayed per-device function, run on
    every device's input blocks, and the compiled program's output blocks."""
    import jax
    from jax.sharding import PartitionSpec as P

    names = tuple(n for n, _ in program.mesh)
    replay = replay_entry(program.module, program.mesh)

    def stacked(*xs: Any) -> tuple[Any, ...]:
        return tuple(o[None] for o in replay(*(x[0] for x in xs)))

    n_in = len(ins[0])
    spec = P(names)  # type: ignore[no-untyped-call]
    fn = jax.jit(jax.shard_map(stacked, mesh=program.replay_mesh, in_specs=(spec,) * n_in,
                               out_specs=spec, check_vma=False))
    got = fn(*(np.stack([rank[k] for rank in ins]) for k in range(n_in)))
    worst = 0.0
    for k, value in enumerate(got):
        for p, rank in enumerate(outs):
            diff = np.abs(np.asarray(value[p], np.float64) - np.asarray(rank[k], np.float64))
            worst = max(worst, float(diff.max(initial=0.0)))
    return worst
