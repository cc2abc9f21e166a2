"""Parallel plans: parse ``--parallel tp=..,pp=..,dp=..``, check them against a cluster.

Contract: ``str -> ParallelPlan`` (`parse_parallel`), ``path -> PlanOverrides``
(`load_plan_file`), and `check_plan(plan, cluster, ...)`, which raises a coded
`PlanError` for a plan that cannot run. A plan is Megatron-style: ranks are numbered
tp fastest, then cp, dp, pp (the stride of each axis's groups follows; Note [Rank
order] in docs/distributed.md). Expert parallelism (ep) splits each data-parallel
group's experts, so ep divides dp.

Error codes (`PlanError`, exit 2: the command line or plan is at fault):

* ``E0801`` a size that does not divide: world size vs tp*cp*pp, global batch vs
  dp*micro-batch, ep vs dp, pp*vpp vs the layers;
* ``E0802`` tp larger than (or not dividing) the attention heads;
* ``E0803`` the plan needs more GPUs than the cluster has;
* ``E0804`` a malformed ``--parallel`` value (unknown key, not a positive integer);
* ``E0805`` a malformed plan YAML file;
* ``E0806`` an option combination that cannot work (``--phase train`` without
  ``--train``, plan options without ``--cluster``, ``--schedule``/``--fail`` without a
  pipelined training step);
* ``E0807``-``E0810`` pipeline schedules, failures and expert loads
  (`solar.distributed.schedules`, `.failures`, `.moe`; docs/distributed.md).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeAlias

from solar.diagnostics import PlanError, UsageError
from solar.files import DataError, parse_data, read_text
from solar.options import Recompute, StepPhase

__all__ = [
    "PLAN_KEYS",
    "ParallelPlan",
    "Phase",
    "PlanFile",
    "Recompute",
    "check_plan",
    "load_plan_file",
    "parse_parallel",
]

Phase: TypeAlias = StepPhase

PLAN_KEYS: Final[tuple[str, ...]] = ("tp", "pp", "dp", "cp", "ep", "vpp", "zero", "sp", "world")


@dataclass(frozen=True, slots=True)
class ParallelPlan:
    """A Megatron-style plan.

    Attributes:
        tp: tensor-parallel size (Megatron column/row sharding of each block).
        pp: pipeline stages.
        dp: data-parallel replicas.
        cp: context-parallel size (the sequence split).
        ep: expert-parallel size (within dp).
        vpp: virtual stages per pipeline rank (interleaved schedule).
        zero: ZeRO stage: 1 shards optimizer state, 2 also gradients, 3 also
            parameters, over dp.
        sp: sequence parallelism in the TP regions (norms and elementwise work
            sharded; all-reduces become reduce-scatter + all-gather).
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    zero: int = 0
    sp: bool = False

    @property
    def world(self) -> int:
        """GPUs the plan uses."""
        return self.tp * self.cp * self.dp * self.pp

    def stride(self, axis: str) -> int:
        """Global-rank distance between consecutive members of an ``axis`` group.

        >>> ParallelPlan(tp=8, pp=4, dp=2).stride("dp"), ParallelPlan(tp=8).stride("tp")
        (8, 1)
        """
        inner = {"tp": 1, "cp": self.tp, "ep": self.tp * self.cp, "dp": self.tp * self.cp,
                 "pp": self.tp * self.cp * self.dp}
        return inner[axis]

    def label(self) -> str:
        """The plan as ``--parallel`` spells it.

        >>> ParallelPlan(tp=8, pp=8, dp=16, zero=1).label()
        'tp=8,pp=8,dp=16,zero=1'
        """
        parts = [f"tp={self.tp}", f"pp={self.pp}", f"dp={self.dp}"]
        for key in ("cp", "ep", "vpp"):
            if getattr(self, key) != 1:
                parts.append(f"{key}={getattr(self, key)}")
        if self.zero:
            parts.append(f"zero={self.zero}")
        if self.sp:
            parts.append("sp=1")
        return ",".join(parts)


_ITEM = re.compile(r"^\s*([a-z]+)\s*=\s*([0-9]{1,18})\s*$")
"""At most 18 digits (a longer value is out of range anyway, and Python refuses to convert
one of over 4300 digits)."""


def parse_parallel(text: str) -> ParallelPlan:
    """Parse ``tp=8,pp=8,dp=16[,cp=..,ep=..,vpp=..,zero=0-3,sp=0|1,world=N]``.

    ``world=N`` leaves dp to be derived: dp = N / (tp*cp*pp), which must divide.

    >>> parse_parallel("tp=8,pp=8,dp=16,zero=1")
    ParallelPlan(tp=8, pp=8, dp=16, cp=1, ep=1, vpp=1, zero=1, sp=False)
    >>> parse_parallel("tp=4,pp=2,world=64").dp
    8

    Raises:
        PlanError: E0804 a malformed item; E0801 a world size that does not divide.
    """
    values: dict[str, int] = {}
    for item in text.split(","):
        match = _ITEM.match(item)
        if match is None or match.group(1) not in PLAN_KEYS:
            raise PlanError(
                f"bad --parallel item `{item.strip()}` in `{text}`",
                code="E0804",
                notes=(f"items are KEY=N with KEY one of {', '.join(PLAN_KEYS)}",),
            )
        key, value = match.group(1), int(match.group(2))
        if key in values:
            raise PlanError(f"--parallel gives `{key}` twice in `{text}`", code="E0804")
        values[key] = value
    return _plan_from(values, origin=f"--parallel {text}")


def _plan_from(values: Mapping[str, int], *, origin: str) -> ParallelPlan:
    for key, value in values.items():
        low = 0 if key in ("zero", "sp") else 1
        high = {"zero": 3, "sp": 1}.get(key, 1 << 20)
        if not low <= value <= high:
            raise PlanError(f"{origin}: `{key}={value}` must lie in [{low}, {high}]",
                            code="E0804")
    world = values.get("world")
    plan = ParallelPlan(
        tp=values.get("tp", 1), pp=values.get("pp", 1), dp=values.get("dp", 1),
        cp=values.get("cp", 1), ep=values.get("ep", 1), vpp=values.get("vpp", 1),
        zero=values.get("zero", 0), sp=bool(values.get("sp", 0)),
    )
    if world is not None:
        inner = plan.tp * plan.cp * plan.pp
        if world % inner:
            raise PlanError(
                f"{origin}: world size {world} is not a multiple of tp*cp*pp = {inner}",
                code="E0801",
            )
        if "dp" in values and plan.dp * inner != world:
            raise PlanError(
                f"{origin}: tp*cp*pp*dp = {plan.world} differs from world size {world}",
                code="E0801",
            )
        plan = dataclasses.replace(plan, dp=world // inner)
    return plan


@dataclass(frozen=True, slots=True)
class PlanFile:
    """A plan given as YAML (``--plan plan.yaml``): the plan and the facts about the
    model that the analysis cannot read off the program.

    Attributes:
        plan: the parallel plan (``parallel:`` mapping).
        heads: attention heads (checked against tp).
        layers: module path of the repeated block stack (``layers``,
            ``transformer.h``), when the name cannot be inferred.
        replicated: module paths whose work TP does not shard (norms by default).
        tp_plan: ``(module path, style)``: torch's TP plan for a derived rank
            (``colwise``/``rowwise``/``replicate``; ``*`` matches one path component;
            Note [Derived ranks] in `solar.distributed.derived`).
    """

    plan: ParallelPlan
    heads: int | None = None
    layers: str | None = None
    replicated: tuple[str, ...] = field(default_factory=tuple)
    tp_plan: tuple[tuple[str, str], ...] = field(default_factory=tuple)


def load_plan_file(path: Path) -> PlanFile:
    """Read a plan YAML file::

        parallel: {tp: 8, pp: 8, dp: 16, zero: 1}
        heads: 96
        layers: transformer.h
        replicated: [ln_f]
        tp_plan: {layers.*.qkv: colwise, layers.*.proj: rowwise}

    Raises:
        PlanError: E0805 for a file that is no such mapping.
        UsageError: the file cannot be read.
    """
    try:
        data = parse_data(read_text(path, max_bytes=1 << 20), fmt="yaml")
    except DataError as err:
        raise PlanError(f"plan file {path} is not valid YAML: {err}", code="E0805") from None
    if not isinstance(data, dict) or not isinstance(data.get("parallel"), dict):
        raise PlanError(f"plan file {path} needs a `parallel:` mapping", code="E0805")
    unknown = set(data) - {"parallel", "heads", "layers", "replicated", "tp_plan"}
    if unknown:
        raise PlanError(f"plan file {path}: unknown key(s) {', '.join(sorted(unknown))}",
                        code="E0805")
    par = data["parallel"]
    if any(k not in PLAN_KEYS or not isinstance(v, int) or isinstance(v, bool)
           for k, v in par.items()):
        raise PlanError(f"plan file {path}: `parallel` maps {', '.join(PLAN_KEYS)} to "
                        "integers", code="E0805")
    heads, layers, replicated = data.get("heads"), data.get("layers"), data.get("replicated", [])
    if heads is not None and (not isinstance(heads, int) or heads < 1):
        raise PlanError(f"plan file {path}: `heads` must be a positive integer", code="E0805")
    if layers is not None and not isinstance(layers, str):
        raise PlanError(f"plan file {path}: `layers` must be a module path", code="E0805")
    if not isinstance(replicated, list) or not all(isinstance(r, str) for r in replicated):
        raise PlanError(f"plan file {path}: `replicated` must be a list of module paths",
                        code="E0805")
    tp_plan = data.get("tp_plan", {})
    if not isinstance(tp_plan, dict) or not all(
            isinstance(k, str) and v in ("colwise", "rowwise", "replicate")
            for k, v in tp_plan.items()):
        raise PlanError(f"plan file {path}: `tp_plan` maps module paths to colwise, rowwise "
                        "or replicate", code="E0805")
    return PlanFile(_plan_from(par, origin=str(path)), heads, layers, tuple(replicated),
                    tuple(tp_plan.items()))


def check_plan(
    plan: ParallelPlan,
    *,
    max_gpus: int | None,
    cluster: str,
    micro_batch: int,
    global_batch: int,
    heads: int | None,
    layers: int | None,
) -> int:
    """Check that ``plan`` can run; return the micro-batches per step per rank.

    Raises:
        PlanError: E0801 (a size does not divide), E0802 (tp vs heads), E0803 (more
            GPUs than the cluster has).
        UsageError: E0905 a non-positive batch.
    """
    if micro_batch < 1 or global_batch < 1:
        raise UsageError("--micro-batch and --global-batch must be positive", code="E0905")
    if max_gpus is not None and plan.world > max_gpus:
        raise PlanError(
            f"plan {plan.label()} needs {plan.world} GPUs; cluster {cluster} has {max_gpus}",
            code="E0803",
        )
    if heads is not None and (plan.tp > heads or heads % plan.tp):
        raise PlanError(
            f"tp={plan.tp} does not divide the model's {heads} attention heads",
            code="E0802",
            notes=("tensor parallelism shards whole heads: tp must divide the heads",),
        )
    if plan.dp % plan.ep:
        raise PlanError(f"ep={plan.ep} does not divide dp={plan.dp}", code="E0801")
    if layers is not None and plan.pp * plan.vpp > layers:
        raise PlanError(
            f"pp*vpp = {plan.pp * plan.vpp} stages for a model of {layers} layers",
            code="E0801",
        )
    per_step = plan.dp * micro_batch
    if global_batch % per_step:
        raise PlanError(
            f"global batch {global_batch} is not a multiple of dp*micro-batch = {per_step}",
            code="E0801",
        )
    return global_batch // per_step
