"""Einsum graphs: programs lifted to einsum nodes with exact, symbolic cost counts.

Contract: `lift_to_einsum(Program) -> EinsumGraph`. Every count is a `Count`
(symbolic in the program's sizes, evaluable at any binding) that is exact or a
lower bound, never more. Counting and FLOP rules: docs/bounds.md.
"""

from __future__ import annotations

from solar.einsum.cost import analyse_value, contraction_operands, flops_per_point
from solar.einsum.count import Count, DeferredCount
from solar.einsum.domain import Domain, LoopDim
from solar.einsum.enumeration import ENUMERATION_LIMIT
from solar.einsum.graph import (
    ContractionInfo,
    Edge,
    EinsumGraph,
    EinsumNode,
    FlopGroup,
    KernelCost,
    NodeAccess,
    NodeKind,
    ProgramTensor,
    SpillInfo,
    TensorTraffic,
    WorkClass,
    einsum_equation,
)
from solar.einsum.lift import lift_to_einsum

__all__ = [
    "ENUMERATION_LIMIT",
    "ContractionInfo",
    "Count",
    "DeferredCount",
    "Domain",
    "Edge",
    "EinsumGraph",
    "EinsumNode",
    "FlopGroup",
    "KernelCost",
    "LoopDim",
    "NodeKind",
    "NodeAccess",
    "SpillInfo",
    "ProgramTensor",
    "TensorTraffic",
    "WorkClass",
    "analyse_value",
    "contraction_operands",
    "einsum_equation",
    "flops_per_point",
    "lift_to_einsum",
]
