"""Capture a distributed JAX program per device, and check it on N host devices.

Contract: ``model file -> DistributedProgram``. The file's function is one ``shard_map``
over a mesh (possibly under ``jit``), or a ``jit`` with ``NamedSharding`` (no
shard_map). Each device's program, the shard_map body or XLA's partitioned HLO
replayed as one (`solar.frontends.jaxfe.hlo_jit`), is lowered once with the mesh known
(`ops_collective`) and merged into one SPMD program
(`solar.frontends.kit.collectives.merge_ranks`; rank = the row-major index of a
device's mesh coordinates = XLA's partition id). JAX fixes its device count when it
initialises, so the capture runs in a subprocess whose ``XLA_FLAGS`` forces
``WORLD_SIZE`` host devices (``--xla_force_host_platform_device_count``); the same
subprocess runs the real program on those devices (for a ``jit``: the compiled user
program itself, not the replay), so `validate_on_host_devices` compares every rank's
outputs of the simulated IR (`solar.validate.execute_distributed`) with the real run's
shards.

Codes: E0557 neither one shard_map nor a jit whose shardings name a mesh
(`solar.frontends.jaxfe.hlo_jit` lists what else it refuses), E0558 the capture
subprocess failed or timed out, E0556 outputs differ from the real run, E0570/E0571
HLO the jit capture cannot read or replay (plus E0550-E0554 from the merge).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.kit import UncoveredOp
from solar.frontends.kit.collectives import compare_ranks, merge_ranks, world_size_of
from solar.ir import Program, parse_program, print_program

__all__ = [
    "HostCapture",
    "HostCheck",
    "capture_on_host_devices",
    "run_host_worker",
    "validate_on_host_devices",
]

TIMEOUT_S = 300.0
"""Seconds the capture subprocess gets (E0558 after)."""


@dataclasses.dataclass(frozen=True, slots=True)
class HostCapture:
    """The SPMD program of a distributed file, what its lowering left uncovered, and
    what its device program came from (``"shard_map"`` or ``"jit"``)."""

    program: Program
    world: int
    coverage: tuple[UncoveredOp, ...]
    ops_seen: int
    keep_live: tuple[str, ...] = ()
    uncovered_values: tuple[str, ...] = ()
    via: str = "shard_map"
    kernel_sources: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class HostCheck:
    """What a host-device validation compared: the world size, the mesh, the file's size
    constants the program ran at, and each output's largest error over all ranks; for a
    ``jit`` program (``via == "jit"``) also the largest difference between the replayed
    partitioned HLO and the compiled program on every device."""

    world: int
    mesh: tuple[tuple[str, int], ...]
    sizes: dict[str, int]
    max_abs_error: dict[str, float]
    via: str = "shard_map"
    replay_error: float | None = None


def _unwrap(jaxpr: Any) -> Any:
    """The ``shard_map`` equation a program consists of (under any ``jit``)."""
    while True:
        eqns = [e for e in jaxpr.eqns]
        if len(eqns) != 1:
            break
        eqn = eqns[0]
        if eqn.primitive.name == "shard_map":
            if list(eqn.invars) == list(jaxpr.invars) and list(eqn.outvars) == list(
                jaxpr.outvars
            ):
                return eqn
            break
        inner = eqn.params.get("jaxpr")
        if inner is None:
            break
        jaxpr = getattr(inner, "jaxpr", inner)
    raise FrontendError(
        "a distributed JAX program must be one shard_map over its inputs (jit with "
        "NamedSharding leaves the per-device program to XLA's partitioner)",
        code="E0557",
    )


def _spec_slices(
    spec: Any, shape: Sequence[int], mesh: Sequence[tuple[str, int]], rank: int
) -> tuple[slice, ...]:
    """The block of a global array that ``rank`` holds under a PartitionSpec."""
    coords: dict[str, int] = {}
    rest = rank
    for name, size in reversed(mesh):
        coords[name] = rest % size
        rest //= size
    sizes = dict(mesh)
    out = []
    entries = tuple(spec) + (None,) * (len(shape) - len(tuple(spec)))
    for dim, entry in zip(shape, entries, strict=True):
        axes = () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
        blocks, index = 1, 0
        for axis in axes:
            blocks *= sizes[axis]
            index = index * sizes[axis] + coords[axis]
        step = dim // blocks
        out.append(slice(index * step, (index + 1) * step))
    return tuple(out)


def run_host_worker(path: str, out: str, real: bool) -> None:
    """The subprocess body: capture ``path``, lower its device program, merge, and save
    the IR text (``ir``), the mesh, and with ``real`` each rank's inputs and outputs.

    The device program is the ``shard_map`` body, or for a ``jit`` with ``NamedSharding``
    XLA's partitioned HLO replayed as one (`solar.frontends.jaxfe.hlo_jit`)."""
    import jax

    from solar.frontends.jaxfe.capture import trace_jax_file
    from solar.frontends.jaxfe.hlo_jit import capture_jit
    from solar.frontends.jaxfe.lowering import lower_jaxpr
    from solar.frontends.jaxfe.ops_collective import DESTINATIONS, MESH

    capture = trace_jax_file(path)
    jit_program = None
    try:
        eqn = _unwrap(capture.closed_jaxpr.jaxpr)
    except FrontendError:
        jit_program = capture_jit(capture, jax.device_count())
    if jit_program is None:
        mesh_obj = eqn.params["mesh"]
        mesh = tuple((str(n), int(s)) for n, s in zip(mesh_obj.axis_names,
                                                       mesh_obj.axis_sizes, strict=True))
        body = jax.extend.core.ClosedJaxpr(eqn.params["jaxpr"], ())
        local = tuple(jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype)  # type: ignore[no-untyped-call]
                      for v in body.jaxpr.invars)
    else:
        mesh, body, local = jit_program.mesh, jit_program.body, jit_program.local
    world = prod(s for _, s in mesh)
    body_capture = dataclasses.replace(capture, closed_jaxpr=body, abstract_args=local)
    destinations: dict[str, dict[int, int]] = {}
    tokens = (MESH.set(mesh), DESTINATIONS.set(destinations))
    try:
        lowered = lower_jaxpr(body_capture)
    finally:
        DESTINATIONS.reset(tokens[1])
        MESH.reset(tokens[0])
    per_rank = [{k: d[r] for k, d in destinations.items() if r in d} for r in range(world)]
    program = merge_ranks([lowered.program] * world, per_rank)
    arrays: dict[str, np.ndarray] = {
        "ir": np.array(print_program(program)),
        "mesh": np.array([f"{n}={s}" for n, s in mesh]),
        "sizes": np.array([f"{k}={v}" for k, v in capture.sizes.items()], dtype=str),
        "coverage": np.array(json.dumps([dataclasses.asdict(u) for u in lowered.coverage])),
        "ops_seen": np.array(lowered.ops_seen),
        "keep_live": np.array(list(lowered.keep_alive), dtype=str),
        "uncovered_values": np.array([v.name for v in lowered.uncovered_values], dtype=str),
        "via": np.array("shard_map" if jit_program is None else "jit"),
        "kernel_sources": np.array(json.dumps(lowered.kernel_sources)),
    }
    if real:
        arrays |= _real_run(capture, lowered, body, eqn if jit_program is None else jit_program,
                            mesh)
    np.savez(out, **arrays)  # type: ignore[arg-type]


def _real_run(
    capture: Any, lowered: Any, body: Any, source: Any, mesh: Sequence[tuple[str, int]]
) -> dict[str, np.ndarray]:
    """Run the real program on the host devices: each rank's inputs (with the HLO's
    constants and the real values of uncovered ops) and outputs, keyed ``rank:in:name``
    and ``rank:out:name``; for a jit (``source`` a `JitDeviceProgram`, else the
    shard_map equation) also the replay's largest difference from it."""
    from solar.frontends.jaxfe.hlo_jit import JitDeviceProgram, device_blocks, replay_error

    arrays: dict[str, np.ndarray] = {}
    args = (*capture.init_params(), *capture.input_values)
    if isinstance(source, JitDeviceProgram):
        ins, outs = device_blocks(source, args)
        arrays["replay_error"] = np.array(replay_error(source, ins, outs))
        device_mesh = source.replay_mesh
    else:
        ins, outs = _shard_map_blocks(capture, source, mesh, args)
        device_mesh = source.params["mesh"]
    if lowered.uncovered_values:
        tapped = _uncovered_blocks(body, device_mesh, lowered.uncovered_values, ins)
        for rank, values in enumerate(tapped):
            arrays |= {f"{rank}:in:{k}": v for k, v in values.items()}
    for rank in range(len(ins)):
        for name, arr in zip(lowered.inputs, ins[rank], strict=False):
            if name is not None:
                arrays[f"{rank}:in:{name}"] = arr
        for name, value in lowered.constant_values:  # the same on every rank
            arrays[f"{rank}:in:{name}"] = np.asarray(value)
        for name, arr in zip(lowered.outputs, outs[rank], strict=False):
            if name is not None:
                arrays[f"{rank}:out:{name}"] = arr
    return arrays


def _uncovered_blocks(
    body: Any, mesh: Any, values: Sequence[Any], ins: Sequence[Sequence[np.ndarray]]
) -> list[dict[str, np.ndarray]]:
    """Per rank, the real values of the outputs of the ops the lowering left uncovered
    (`solar.frontends.kit.UncoveredValue`): the device program evaluated op by op on
    every device, the rank's input blocks stacked along a leading axis over the mesh."""
    import jax
    from jax.sharding import PartitionSpec as P

    from solar.frontends.jaxfe.reference import eval_with_taps

    taps = [(v.site, v.output) for v in values]

    def per_device(*xs: Any) -> tuple[Any, ...]:
        found = eval_with_taps(body, [x[0] for x in xs], taps)
        return tuple(found[t][None] for t in taps)

    spec = P(tuple(mesh.axis_names))  # type: ignore[no-untyped-call]
    n = len(ins[0])
    fn = jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(spec,) * n, out_specs=spec,
                               check_vma=False))
    got = fn(*(np.stack([rank[k] for rank in ins]) for k in range(n)))
    return [{v.name: np.asarray(g[p]) for v, g in zip(values, got, strict=True)}
            for p in range(len(ins))]


def _shard_map_blocks(
    capture: Any, eqn: Any, mesh: Sequence[tuple[str, int]], args: Sequence[Any]
) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
    """Run the program; per rank, the blocks of its inputs and outputs (the shard_map's
    ``in_specs`` / ``out_specs``)."""
    import jax

    outs = [np.asarray(o) for o in jax.jit(capture.flat_fn)(*args)]
    in_specs, out_specs = eqn.params["in_specs"], eqn.params["out_specs"]
    world = prod(s for _, s in mesh)
    ins_r = [[np.asarray(a)[_spec_slices(in_specs[k], np.shape(a), mesh, rank)]
              for k, a in enumerate(args)] for rank in range(world)]
    outs_r = [[o[_spec_slices(out_specs[k], o.shape, mesh, rank)] for k, o in enumerate(outs)]
              for rank in range(world)]
    return ins_r, outs_r


_WORKER = """
import sys
from solar.diagnostics import SolarError
from solar.frontends.jaxfe.distributed import run_host_worker
try:
    run_host_worker(sys.argv[1], sys.argv[2], sys.argv[3] == "real")
except SolarError as err:
    import json
    with open(sys.argv[2] + ".err", "w", encoding="utf-8") as f:
        json.dump({"code": err.code, "message": err.message, "notes": list(err.notes)}, f)
    sys.exit(3)
"""


def _run_worker(path: Path, world: int, real: bool, timeout_s: float) -> dict[str, np.ndarray]:
    with tempfile.TemporaryDirectory(prefix="solar-jax-") as tmp:
        out = os.path.join(tmp, "result.npz")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            "JAX_PLATFORMS": "cpu",
            "XLA_FLAGS": f"--xla_force_host_platform_device_count={world}",
        }
        mode = "real" if real else "capture"
        try:
            done = subprocess.run(
                [sys.executable, "-c", _WORKER, str(path), out, mode],
                capture_output=True,
                env=env,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise FrontendError(
                f"capturing {path.name} on {world} host devices took over {timeout_s:.0f} s",
                code="E0558",
            ) from None
        if os.path.exists(out + ".err"):  # the worker's own coded error, passed on
            with open(out + ".err", encoding="utf-8") as f:
                err = json.load(f)
            raise FrontendError(err["message"], code=err["code"], notes=tuple(err["notes"]))
        if done.returncode != 0:
            text = done.stderr.decode(errors="replace").strip().splitlines()
            last = next((ln for ln in reversed(text) if "Error" in ln), text[-1] if text else "")
            raise FrontendError(
                f"capturing {path.name} on {world} host devices failed: {last.strip()}",
                code="E0558",
            )
        with np.load(out) as data:
            return {k: data[k] for k in data.files}


def capture_on_host_devices(
    path: str | Path, *, world: int | None = None, timeout_s: float = TIMEOUT_S
) -> HostCapture:
    """The SPMD program of a distributed file, captured on ``world`` host devices.

    Raises:
        FrontendError: E0554 (no ``WORLD_SIZE``), E0557, E0558, E0550-E0553.
    """
    path = Path(path)
    world = world if world is not None else world_size_of(path)
    result = _run_worker(path, world, False, timeout_s)
    coverage = tuple(UncoveredOp(**u) for u in json.loads(str(result["coverage"])))
    program = parse_program(str(result["ir"]), filename=str(path))
    return HostCapture(
        program,
        world,
        coverage,
        int(result["ops_seen"]),
        tuple(result["keep_live"].tolist()),
        tuple(result["uncovered_values"].tolist()),
        str(result["via"]),
        tuple((k, s) for k, s in json.loads(str(result["kernel_sources"]))),
    )


def validate_on_host_devices(
    path: str | Path,
    *,
    world: int | None = None,
    timeout_s: float = TIMEOUT_S,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> HostCheck:
    """Run the file on ``world`` host devices and compare each rank with the IR, each
    output within ``rtol``/``atol`` or the policy tolerance of its dtype and reductions
    (`solar.validate.output_tolerances`, e.g. for bf16), whichever is larger.

    Raises:
        FrontendError: as `capture_on_host_devices`.
        ValidationMismatchError: a rank's output differs beyond the tolerance (E0556).
    """
    from solar.ir import resolve_sizes
    from solar.validate import execute_distributed, output_tolerances

    path = Path(path)
    world = world if world is not None else world_size_of(path)
    result = _run_worker(path, world, True, timeout_s)
    program = parse_program(str(result["ir"]), filename=str(path))
    mesh = tuple((m.split("=")[0], int(m.split("=")[1])) for m in result["mesh"].tolist())
    inputs = [
        {k.split(":", 2)[2]: v for k, v in result.items() if k.startswith(f"{r}:in:")}
        for r in range(world)
    ]
    got = execute_distributed(program, inputs)
    want = [
        {k.split(":", 2)[2]: v for k, v in result.items() if k.startswith(f"{r}:out:")}
        for r in range(world)
    ]
    policy = output_tolerances(program, resolve_sizes(program), want[0])
    errors: dict[str, float] = {}
    for name in want[0]:
        tol = policy.get(name)
        errors |= compare_ranks(got, [{name: w[name]} for w in want],
                                rtol=max(rtol, tol.rtol if tol else 0.0),
                                atol=max(atol, tol.atol if tol else 0.0),
                                what=f"the real run on {world} host devices")
    sizes = {v.split("=")[0]: int(v.split("=")[1]) for v in result["sizes"].tolist()}
    replay = float(result["replay_error"]) if "replay_error" in result else None
    return HostCheck(world, mesh, sizes, errors, str(result["via"]), replay)
