"""Tensor-parallel plans for single-device models: inferred from the module tree, or read
from a plan file, and applied with torch's own ``parallelize_module``.

Contract: ``nn.Module -> TPPlan`` (`infer_tp_plan`: Megatron's pattern, Note [Inferred TP
plans]), ``(nn.Module, {path pattern: style}) -> TPPlan`` (`given_tp_plan`), and
`apply_tp_plan`, which shards a built model over a 1-D device mesh of the fake process
group (`solar.frontends.pytorch.derive_rank` captures one rank of it). Pure over the
module tree; torch is imported inside the functions only.

Note [Inferred TP plans]
~~~~~~~~~~~~~~~~~~~~~~~~
Megatron-LM shards each transformer block by columns where a projection fans out (the
Q/K/V, fused QKV, up, gate and first MLP projections: ``ColwiseParallel``) and by rows
where it fans back in (the attention output and the down/second MLP projection:
``RowwiseParallel``), so each block runs one all-reduce per row-parallel output in the
forward and one per column-parallel input in the backward (Shoeybi et al. 2019,
arXiv 1909.08053, Sec. 3). The inference finds the blocks (the children of the outermost
``ModuleList``/``Sequential`` whose children are two or more modules of one class) and
names each ``nn.Linear`` in them by its own name (`COLWISE_NAMES`, `ROWWISE_NAMES`;
BERT's ``dense`` by its parent: ``intermediate`` fans out, ``output`` fans in). Experts
of an MoE block are Linears of the block like any other (each expert sharded as a
Megatron MLP). A block that has column-parallel Linears and no row-parallel one (or the
converse), a Linear whose sharded dimension tp does not divide, or a model without such
blocks has no inferred plan: the caller falls back to the analytic division and says why.
Embeddings, the output head, norms and routers stay replicated (Megatron shards the
vocabulary too; a replicated one is what torch's plan runs, charged in full).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from solar.diagnostics import PlanError

__all__ = [
    "COLWISE_NAMES",
    "ROWWISE_NAMES",
    "STYLES",
    "Style",
    "TPPlan",
    "apply_tp_plan",
    "given_tp_plan",
    "infer_tp_plan",
    "tp_mesh",
]

Style: TypeAlias = Literal["colwise", "rowwise", "replicate"]
STYLES: Final[tuple[Style, ...]] = ("colwise", "rowwise", "replicate")

COLWISE_NAMES: Final = frozenset({
    "q", "k", "v", "q_proj", "k_proj", "v_proj", "query", "key", "value", "qkv", "c_attn",
    "query_key_value", "wqkv", "Wqkv", "to_q", "to_k", "to_v", "to_qkv", "wq", "wk", "wv",
    "up_proj", "gate_proj", "gate_up_proj", "fc1", "c_fc", "w1", "w3", "dense_h_to_4h",
    "lin1", "wi", "wi_0", "wi_1", "fc_in", "linear1",
})
"""Linears that fan out (column-parallel in Megatron)."""

ROWWISE_NAMES: Final = frozenset({
    "o", "o_proj", "out_proj", "proj", "c_proj", "wo", "down_proj", "fc2", "w2",
    "dense_4h_to_h", "lin2", "fc_out", "linear2",
})
"""Linears that fan back in (row-parallel in Megatron)."""

_PARENT_STYLE: Final[Mapping[str, Style]] = {"intermediate": "colwise", "output": "rowwise"}


@dataclass(frozen=True, slots=True)
class TPPlan:
    """A tensor-parallel plan for one model.

    Attributes:
        styles: module path -> style, each Linear the plan shards (or replicates).
        source: ``inferred`` (Note [Inferred TP plans]) or ``plan file``.
        reason: why no plan could be inferred (``styles`` is then empty).
    """

    styles: Mapping[str, Style]
    source: str
    reason: str | None = None

    def label(self) -> str:
        """The plan in words, block indices folded to ``*``.

        >>> TPPlan({"h.0.fc": "colwise", "h.1.fc": "colwise", "h.0.out": "rowwise"},
        ...        "inferred").label()
        'ColwiseParallel: h.*.fc; RowwiseParallel: h.*.out'
        """
        names = {"colwise": "ColwiseParallel", "rowwise": "RowwiseParallel",
                 "replicate": "replicated"}
        groups: dict[str, list[str]] = {}
        for path, style in self.styles.items():
            folded = re.sub(r"(^|\.)\d+(?=\.|$)", r"\1*", path)
            paths = groups.setdefault(style, [])
            if folded not in paths:
                paths.append(folded)
        return "; ".join(f"{names[s]}: {', '.join(groups[s])}" for s in STYLES if s in groups)


def _blocks(model: Any) -> list[tuple[str, Any]]:
    """The repeated blocks: children of the outermost ModuleList/Sequential with two or
    more children of one class (Note [Inferred TP plans])."""
    import torch

    for path, mod in model.named_modules():
        if not isinstance(mod, torch.nn.ModuleList | torch.nn.Sequential):
            continue
        kids = list(mod.named_children())
        classes = {type(m) for _, m in kids}
        if len(kids) >= 2 and len(classes) == 1:
            return [(f"{path}.{name}" if path else name, m) for name, m in kids]
    return []


def _style_of(path: str) -> Style | None:
    parts = path.split(".")
    name = parts[-1]
    if name in COLWISE_NAMES:
        return "colwise"
    if name in ROWWISE_NAMES:
        return "rowwise"
    if name == "dense" and len(parts) >= 2:
        return _PARENT_STYLE.get(parts[-2])
    return None


def _divides(linear: Any, style: Style, tp: int) -> bool:
    if style == "colwise":
        return bool(linear.out_features % tp == 0)
    if style == "rowwise":
        return bool(linear.in_features % tp == 0)
    return True


def infer_tp_plan(model: Any, tp: int) -> TPPlan:
    """Megatron's plan for ``model``'s blocks (Note [Inferred TP plans]); a plan with a
    ``reason`` and no styles where none can be inferred."""
    import torch

    blocks = _blocks(model)
    if not blocks:
        return TPPlan({}, "inferred", "no repeated block stack (a ModuleList of blocks)")
    styles: dict[str, Style] = {}
    for prefix, block in blocks:
        seen: set[Style] = set()
        for name, mod in block.named_modules():
            if not isinstance(mod, torch.nn.Linear) or not name:
                continue
            style = _style_of(name)
            if style is None:
                continue
            if not _divides(mod, style, tp):
                return TPPlan({}, "inferred", f"tp={tp} does not divide the sharded dimension "
                              f"of {prefix}.{name} ({mod.in_features} -> {mod.out_features})")
            styles[f"{prefix}.{name}"] = style
            seen.add(style)
        if seen != {"colwise", "rowwise"}:
            return TPPlan({}, "inferred", f"block {prefix} has no column-parallel and "
                          "row-parallel Linear pair (Megatron's pattern)")
    return TPPlan(styles, "inferred")


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + r"\.".join("[^.]+" if p == "*" else re.escape(p)
                                       for p in pattern.split(".")) + "$")


def given_tp_plan(model: Any, patterns: Mapping[str, str], *, where: str) -> TPPlan:
    """The plan a plan file gives: module path (``*`` matches one path component) ->
    ``colwise``/``rowwise``/``replicate``.

    Raises:
        PlanError: E0805 a path that names no Linear of the model, or an unknown style.
    """
    import torch

    linears = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    styles: dict[str, Style] = {}
    for pattern, style in patterns.items():
        if style not in STYLES:
            raise PlanError(f"{where}: `tp_plan` style `{style}` for `{pattern}` is not one of "
                            f"{', '.join(STYLES)}", code="E0805")
        hits = [n for n in linears if _glob(pattern).match(n)]
        if not hits:
            raise PlanError(f"{where}: `tp_plan` path `{pattern}` names no nn.Linear of the "
                            "model", code="E0805",
                            notes=(f"Linears of the model: {', '.join(linears[:8])}"
                                   f"{', ...' if len(linears) > 8 else ''}",))
        styles.update({n: style for n in hits})
    return TPPlan(styles, "plan file")


def tp_mesh(tp: int) -> Any:
    """A 1-D CPU device mesh of ``tp`` ranks (the process group must be initialised;
    built outside any fake mode: the mesh reads its rank map)."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", (tp,))


def apply_tp_plan(model: Any, plan: TPPlan, mesh: Any) -> Any:
    """``model`` sharded by ``plan`` over the 1-D ``mesh`` (`tp_mesh`: torch's
    ``parallelize_module``). Each rank keeps its local shard as it is
    (``src_data_rank=None``: nothing is scattered)."""
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    make = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
    styles = {p: make[s]() for p, s in plan.styles.items() if s in make}
    return parallelize_module(model, mesh, styles, src_data_rank=None)
