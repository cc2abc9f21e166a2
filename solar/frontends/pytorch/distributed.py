"""Capture a torch.distributed program per rank, and check it against a real gloo run.

Contract: ``model file -> DistributedProgram`` (`capture_distributed`): the file is
captured once per rank under PyTorch's fake process group (no communication, no
GPUs: `torch.testing._internal.distributed.fake_pg`), each capture is lowered with
its collectives (`ops_collective`), and the rank programs are merged into one SPMD
program (`solar.frontends.kit.collectives.merge_ranks`). `validate_with_gloo` runs the
same file on ``world`` CPU processes over the gloo backend, each a subprocess that
captures its rank the same way and records the real run's inputs and outputs, then
runs the merged program with `solar.validate.execute_distributed` and compares every
rank's outputs. A rank that does not finish in time (a deadlock: unmatched sends, a
collective some rank skips) is killed and reported as E0555, never waited on.

The world size is the file's module-level ``WORLD_SIZE`` (an integer) unless given.

Codes: E0554 no world size, E0555 a real-run rank failed or timed out, E0556 the real
run's outputs differ from the simulated ones (plus the merge's E0550-E0553).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.kit import LoweredProgram
from solar.frontends.kit.collectives import (
    RankContext,
    compare_ranks,
    current_rank,
    merge_ranks,
    world_size_of,
)
from solar.frontends.pytorch.capture_dist import distributed_capture
from solar.frontends.pytorch.loader import ProgramSource, source_for_file
from solar.frontends.pytorch.train_step import TrainStep
from solar.ir import Program, parse_program, print_program

__all__ = [
    "DistributedProgram",
    "RankCheck",
    "capture_distributed",
    "capture_rank",
    "validate_with_gloo",
    "world_size_of",
]

REAL_RUN_TIMEOUT_S = 120.0
"""Seconds all ranks of a real run get together before they are killed (E0555)."""


@dataclass(frozen=True, slots=True)
class DistributedProgram:
    """One SPMD program and the per-rank lowerings it was merged from."""

    program: Program
    world: int
    ranks: tuple[LoweredProgram, ...]


@dataclass(frozen=True, slots=True)
class RankCheck:
    """What a real-run validation compared: the world size, the sizes the program ran at
    (the file's size constants and the world size ``W``) and each output's largest error
    over all ranks."""

    world: int
    sizes: Mapping[str, int]
    max_abs_error: Mapping[str, float]


@contextlib.contextmanager
def _fake_group(rank: int, world: int) -> Iterator[None]:
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", rank=rank, world_size=world, store=FakeStore())
    try:
        yield
    finally:
        dist.destroy_process_group()


def _group_ranks(name: str) -> tuple[int, ...]:
    import torch.distributed as dist
    from torch.distributed import distributed_c10d

    group = distributed_c10d._resolve_process_group(name)  # type: ignore[attr-defined,arg-type]
    return tuple(dist.get_process_group_ranks(group))


def capture_rank(
    path: str | Path, rank: int, world: int, step: TrainStep | None = None,
    *, source: ProgramSource | None = None,
) -> tuple[Any, LoweredProgram, dict[str, int]]:
    """Capture and lower one rank of ``path`` (one training ``step`` of it when given),
    or of ``source`` when given; a process group must be initialised.

    Returns:
        The `TorchCapture`, its lowering, and each ``permute`` kernel's destination.
    """
    from solar.frontends.pytorch.capture import capture_program
    from solar.frontends.pytorch.driver import lower_capture
    from solar.frontends.pytorch.ops_collective import GROUP_RANKS, SENDS, Sends

    src = source or source_for_file(path, train=step is not None, step=step)
    # a derived rank (``source``) runs on fake tensors (DTensor on meta cannot run its
    # collectives), captured once (Note [Unrecorded sharding propagation])
    capture = capture_program(src, on_meta=False if source is not None else None)
    if source is None and "torch.distributed.tensor" in sys.modules:
        # DTensor propagates shardings by running ops on fake tensors the first time it
        # meets an op; the recorder sees those too. The second capture finds them cached.
        capture = capture_program(src)
    sends = Sends()
    tokens = (current_rank.set(RankContext(rank, world)), GROUP_RANKS.set(_group_ranks),
              SENDS.set(sends))
    try:
        lowered = lower_capture(capture)
    finally:
        SENDS.reset(tokens[2])
        GROUP_RANKS.reset(tokens[1])
        current_rank.reset(tokens[0])
    return capture, lowered, sends.destinations


def capture_distributed(
    path: str | Path, *, world: int | None = None, step: TrainStep | None = None
) -> DistributedProgram:
    """Capture every rank of ``path`` under the fake process group and merge them;
    with ``step``, one training step of each rank (``--train``: train_step.py).

    Raises:
        FrontendError: E0554 (no world size), E0550-E0553 (ranks disagree), or a
            capture error (E05xx).
    """
    world = world if world is not None else world_size_of(path)
    ranks, destinations = [], []
    for rank in range(world):
        with _fake_group(rank, world), distributed_capture():
            _, lowered, dest = capture_rank(path, rank, world, step)
        ranks.append(lowered)
        destinations.append(dest)
    program = merge_ranks([r.program for r in ranks], destinations)
    return DistributedProgram(program, world, tuple(ranks))


_WORKER = """
import json, sys
from solar.frontends.pytorch.distributed import run_gloo_rank
run_gloo_rank(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5],
              train=sys.argv[6] == "train", derive=json.loads(sys.argv[7]))
"""


def _derived_source(path: str, world: int, step: TrainStep | None,
                    derive: Mapping[str, Any]) -> ProgramSource:
    """The model file sharded by the TP plan ``derive["styles"]`` over all ``world``
    ranks, at the sizes ``derive["sizes"]`` (a derived rank: `derive_plan_capture`)."""
    import dataclasses

    from solar.frontends.pytorch.derive_plan import TPPlan, apply_tp_plan, tp_mesh

    plan, mesh = TPPlan(dict(derive["styles"]), "given"), tp_mesh(world)
    source = source_for_file(path, overrides=dict(derive.get("sizes", {})),
                             train=step is not None, step=step)
    return dataclasses.replace(source, transform=lambda m: apply_tp_plan(m, plan, mesh))


def run_gloo_rank(
    path: str, rank: int, world: int, store: str, out: str, *, train: bool = False,
    derive: Mapping[str, Any] | None = None,
) -> None:
    """One real-run rank (in its own process): capture, lower, run for real, save;
    with ``train``, one training step with the default optimizer (``--train``); with
    ``derive`` (``styles``: a TP plan, ``sizes``: size constants), the single-device
    model file sharded by that plan (`_derived_source`).

    Writes ``out`` (``.npz``): ``in:NAME`` and ``out:NAME`` arrays and the rank's IR
    text under ``ir``.
    """
    from datetime import timedelta

    import torch.distributed as dist

    from solar.frontends.pytorch.reference import reference_data

    dist.init_process_group(
        "gloo",
        init_method=f"file://{store}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=REAL_RUN_TIMEOUT_S),
    )
    try:
        with distributed_capture():
            step = TrainStep() if train else None
            source = _derived_source(path, world, step, derive) if derive else None
            capture, lowered, dest = capture_rank(path, rank, world, step, source=source)
            inputs, outputs = reference_data(lowered, capture)
    finally:
        dist.destroy_process_group()
    arrays = {f"in:{k}": v for k, v in inputs.items()}
    arrays |= {f"out:{k}": v for k, v in outputs.items()}
    arrays["ir"] = np.array(print_program(lowered.program))
    arrays["sizes"] = np.array([f"{k}={v}" for k, v in capture.info.sizes.items()])
    arrays["destinations"] = np.array([f"{k}={v}" for k, v in dest.items()], dtype=str)
    np.savez(out, **arrays)  # type: ignore[arg-type]


def _real_run(
    path: Path, world: int, timeout_s: float, train: bool, derive: Mapping[str, Any] | None,
) -> list[dict[str, np.ndarray]]:
    with tempfile.TemporaryDirectory(prefix="solar-gloo-") as tmp:
        store = os.path.join(tmp, "store")
        outs = [os.path.join(tmp, f"rank{r}.npz") for r in range(world)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _WORKER, str(path), str(r), str(world), store, outs[r],
                 "train" if train else "forward", json.dumps(derive or {})],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
            )
            for r in range(world)
        ]
        try:
            errors = _wait_all(procs, timeout_s)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        if errors:
            raise FrontendError(
                f"the real gloo run of {path.name} on {world} ranks failed: {errors[0]}",
                code="E0555",
                notes=tuple(errors[1:4]),
            )
        loaded = []
        for out in outs:
            with np.load(out) as data:
                loaded.append({k: data[k] for k in data.files})
        return loaded


def _wait_all(procs: list[subprocess.Popen[bytes]], timeout_s: float) -> list[str]:
    import time

    deadline = time.monotonic() + timeout_s
    errors = []
    for rank, p in enumerate(procs):
        try:
            _, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return [f"rank {rank} did not finish within {timeout_s:.0f} s (a deadlock: a "
                    "send without its receive, or a collective some rank skips)"]
        if p.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            errors.append(f"rank {rank} exited with {p.returncode}: {tail[0]}")
    return errors


def validate_with_gloo(
    path: str | Path,
    *,
    world: int | None = None,
    timeout_s: float = REAL_RUN_TIMEOUT_S,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    train: bool = False,
    derive: Mapping[str, Any] | None = None,
    program: Program | None = None,
) -> RankCheck:
    """Run ``path`` on ``world`` gloo processes and compare with the simulated IR; with
    ``train``, one training step of it (``--train``, the default optimizer); with
    ``derive`` (``{"styles": {module path: colwise|rowwise}, "sizes": {...}}``), the
    single-device file sharded by that TP plan on every rank (a derived rank,
    `solar.frontends.pytorch.derive_plan_capture`). The IR is ``program`` (the
    analysis's capture) when given, else the one merged from the real run's own captures.

    Raises:
        FrontendError: E0554, E0555 (a rank failed or deadlocked), E0550-E0553.
        ValidationMismatchError: an output differs beyond the tolerance (E0556).
    """
    from solar.validate import execute_distributed

    path = Path(path)
    world = world if world is not None else world_size_of(path)
    real = _real_run(path, world, timeout_s, train, derive)
    if program is None:
        programs = [parse_program(str(r["ir"]), filename=f"<rank {k}>")
                    for k, r in enumerate(real)]
        program = merge_ranks(programs, [dict(_pairs(r["destinations"])) for r in real])
    inputs = [{k[3:]: v for k, v in r.items() if k.startswith("in:")} for r in real]
    got = execute_distributed(program, inputs)
    want = [{k[4:]: v for k, v in r.items() if k.startswith("out:")} for r in real]
    errors = compare_ranks(got, want, rtol=rtol, atol=atol, what="the real gloo run")
    sizes = dict(_pairs(real[0]["sizes"]))
    sizes |= {s.name: int(getattr(s.value, "value", 0)) for s in program.sizes}
    return RankCheck(world, sizes, errors)


def _pairs(values: np.ndarray) -> list[tuple[str, int]]:
    return [(v.split("=")[0], int(v.split("=")[1])) for v in values.tolist()]
