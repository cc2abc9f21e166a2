"""Per-stage F, B, W and O of a pipeline plan, read off the training step's kernels.

Contract: ``(Program, kernel bounds, ModelStructure, ParallelPlan, ...) -> StageCosts``,
pure. Each kernel is placed on a pipeline rank and given a phase:

* **Stage** (Note [Stage of a kernel]): a forward kernel of the block stack
  (``layers_<i>_..``) belongs to layer ``i``'s rank under Megatron's even split
  (layer ``i`` is in virtual stage ``i // (L / (pp v))``, on rank ``vs % pp``); forward
  kernels before the stack (embeddings) are rank 0's, after it (final norm, LM head,
  loss) the last rank's. A backward kernel runs where the latest-made of the saved
  activations it reads was made (a layer's backward also reads its input, which the
  previous layer made, perhaps on another rank, and values every layer shares, such as
  a mask made before the stack); one that reads no saved activation runs where the
  parameter it reads is used (``dX = dY W^T``; a parameter two ranks use, a tied
  embedding, decides nothing), else where its latest gradient input was made; an
  optimizer's work is split over the ranks by the parameter bytes each rank owns.
* **B or W** (Note [Input and weight gradients]): a backward kernel that reads a
  parameter (``dX = dY W^T``, a norm's ``dX``), or whose result flows into one, is on
  the input-gradient chain: B. The others only make weight gradients (``dW = X^T dY``,
  bias sums): W. A fused kernel that makes both (a norm's backward) counts as B. Work
  wrongly put in W can only lower a schedule's time; a W kernel counted as B is at
  most a norm's parameter gradient.

Each operation's time: its kernels' per-pipe compute times, each divided by the plan's
sharding of the kernel (tp x cp; replicated kernels cp, or tp x cp under sequence
parallelism; the optimizer tp, and dp under ZeRO >= 1), summed per pipe and combined by
the single-device unit rule (`unit_time_of`: the tensor pipes add on the one matrix
unit, distinct units overlap). A full recompute adds the stage's stack forward
to its B. A rank runs its operations one at a time (one compute stream).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from solar.bounds import KernelBound, ResolvedPipe, unit_time_of
from solar.distributed.plan import ParallelPlan, Recompute
from solar.distributed.schedules import StageCosts
from solar.distributed.structure import ModelStructure, kernel_tensors
from solar.ir import Program, TensorDecl, eval_int

__all__ = ["stage_costs", "stage_of_layer"]


def stage_of_layer(layer: int, layers: int, pp: int, vpp: int = 1) -> int:
    """The pipeline rank of a stack layer (Megatron's even split over pp x vpp stages).

    >>> [stage_of_layer(i, 8, 2, 2) for i in range(8)]
    [0, 0, 1, 1, 0, 0, 1, 1]
    """
    per = max(layers // (pp * vpp), 1)
    return min(layer // per, pp * vpp - 1) % pp


def _stages(program: Program, s: ModelStructure,
            plan: ParallelPlan) -> tuple[dict[str, int], dict[str, int]]:
    """Each kernel's pipeline rank (Note [Stage of a kernel]), and the rank of each
    tensor the forward makes."""
    pp = plan.pp
    stack = re.compile(rf"^{re.escape(s.stack)}_(\d+)_") if s.stack else None
    made: dict[str, int] = {}
    when: dict[str, int] = {}  # forward position of the kernel that made a tensor
    out: dict[str, int] = {}
    seen_stack = False
    fwd = [k for k in program.kernels if s.phase.get(k.name) == "forward"]
    for pos, k in enumerate(fwd):
        m = stack.match(k.name) if stack else None
        if m:
            seen_stack = True
            out[k.name] = stage_of_layer(int(m.group(1)), s.layers, pp, plan.vpp)
        else:
            out[k.name] = pp - 1 if seen_stack else 0
        for t in kernel_tensors(k)[1]:
            made[t], when[t] = out[k.name], pos
    owners: dict[str, set[int]] = {}  # the ranks whose forward reads each parameter
    params = {d.name for d in program.tensors if d.role == "param"}
    for k in fwd:
        for t in kernel_tensors(k)[0] & params:
            owners.setdefault(t, set()).add(out[k.name])
    grad: dict[str, tuple[int, int]] = {}  # backward position and rank of a gradient
    for pos, k in enumerate(k for k in program.kernels if s.phase.get(k.name) == "backward"):
        reads, writes = kernel_tensors(k)
        saved = [(when[t], made[t]) for t in reads if t in made]
        owner = {r for t in reads & params for r in owners.get(t, ())}
        inputs = [grad[t] for t in reads if t in grad]
        if saved:
            out[k.name] = max(saved)[1]
        elif len(owner) == 1:
            out[k.name] = owner.pop()
        else:
            out[k.name] = max(inputs)[1] if inputs else pp - 1
        for t in writes:
            grad[t] = (pos, out[k.name])
    return out, made


def _input_grad_kernels(program: Program, s: ModelStructure) -> set[str]:
    """Backward kernels on the input-gradient chain (Note [Input and weight gradients])."""
    params = {d.name for d in program.tensors if d.role == "param"}
    back = [k for k in program.kernels if s.phase.get(k.name) == "backward"]
    uses = {k.name: kernel_tensors(k) for k in back}
    chain: set[str] = set()
    needed: set[str] = set()  # tensors a chain kernel reads
    for k in reversed(back):
        reads, writes = uses[k.name]
        if reads & params or writes & needed:
            chain.add(k.name)
            needed |= reads
    return chain


def _param_stage_bytes(program: Program, s: ModelStructure, stage: Mapping[str, int],
                       sizes: Mapping[str, int], pp: int) -> list[float]:
    owner: dict[str, int] = {}
    for k in program.kernels:
        if s.phase.get(k.name) == "forward":
            for t in kernel_tensors(k)[0]:
                owner[t] = min(owner.get(t, pp), stage[k.name])
    out = [0.0] * pp
    for d in program.tensors:
        if d.role == "param" and d.name in owner:
            out[owner[d.name]] += _nbytes(d, sizes)
    return out


def stage_costs(
    program: Program,
    kernels: Sequence[KernelBound],
    s: ModelStructure,
    plan: ParallelPlan,
    sizes: Mapping[str, int],
    *,
    recompute: Recompute,
    send_s: float,
) -> StageCosts:
    """Per-rank F, B, W (per micro-batch) and O (per step) of ``plan`` (module docstring).

    Args:
        program: the captured training step (one micro-batch).
        kernels: its per-kernel bounds (the unfused model, cold cache).
        s: its structure.
        plan: the plan.
        sizes: its size binding.
        recompute: the activation recompute policy.
        send_s: one boundary transfer's lower bound.
    """
    pp = plan.pp
    stage, made = _stages(program, s, plan)
    chain = _input_grad_kernels(program, s)
    sharded = plan.tp * plan.cp
    replicated = (plan.tp if plan.sp else 1) * plan.cp
    opt_div = plan.tp * (plan.dp if plan.zero >= 1 else 1)
    # busy[phase][stage][pipe]
    busy: dict[str, list[dict[ResolvedPipe, float]]] = {ph: [{} for _ in range(pp)]
                                                        for ph in ("F", "B", "W", "O")}
    opt_total: dict[ResolvedPipe, float] = {}
    for k in kernels:
        phase = s.phase.get(k.name, "forward")
        if phase == "optimizer":
            _add(opt_total, k, opt_div)
            continue
        div = replicated if k.name in s.replicated else sharded
        r = stage.get(k.name, 0)
        kinds = ["F"] if phase == "forward" else ["B" if k.name in chain else "W"]
        if phase == "forward" and recompute == "full" and k.name in s.stack_forward:
            kinds.append("B")
        for kind in kinds:
            _add(busy[kind][r], k, div)
    owned = _param_stage_bytes(program, s, stage, sizes, pp)
    total = sum(owned) or 1.0
    opt = unit_time_of(opt_total)

    def per(kind: str) -> tuple[float, ...]:
        return tuple(unit_time_of(busy[kind][r]) for r in range(pp))

    return StageCosts(
        forward_s=per("F"), input_grad_s=per("B"), weight_grad_s=per("W"),
        optimizer_s=tuple(opt * owned[r] / total if sum(owned) else opt / pp
                          for r in range(pp)),
        send_s=send_s,
        activation_bytes=tuple(x / (plan.tp * plan.cp)
                               for x in _saved_bytes(program, s, made, sizes, pp)),
    )


def _add(busy: dict[ResolvedPipe, float], k: KernelBound, div: int) -> None:
    for rp, t in k.compute_time_s_by_pipe.items():
        busy[rp] = busy.get(rp, 0.0) + t / div


def _saved_bytes(program: Program, s: ModelStructure, made: Mapping[str, int],
                 sizes: Mapping[str, int], pp: int) -> list[float]:
    """Per rank, the bytes of one micro-batch's forward values the backward reads."""
    read_back: set[str] = set()
    for k in program.kernels:
        if s.phase.get(k.name) == "backward":
            read_back |= kernel_tensors(k)[0]
    out = [0.0] * pp
    for d in program.tensors:
        if d.name in made and d.name in read_back and d.role not in ("param", "input"):
            out[made[d.name]] += _nbytes(d, sizes)
    return out


def _nbytes(d: TensorDecl, sizes: Mapping[str, int]) -> float:
    n = float(d.dtype.itemsize_bytes)
    for dim in d.shape:
        n *= eval_int(dim, sizes)
    return n
