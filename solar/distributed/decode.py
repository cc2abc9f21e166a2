"""One decode step derived from a forward over whole sequences (``--phase decode``).

Contract: ``ModelStructure -> DecodeStep``, pure. A decode step makes one new token per
sequence, attending to a KV cache of the ``S`` tokens before it (Note [Decode step]).

Note [Decode step]: the program is a forward over ``B`` sequences of ``S`` tokens (the
first input ``[B, S]``, or ``[B, S, hidden]``); ``--phase decode`` bounds the step that
makes token ``S + 1`` of each sequence with the cache of the first ``S``. A program whose
first input has one token per sequence is taken as the decode step itself (``S = 1``).

* Compute: each kernel's work divided by ``S``. The work of a kernel linear in the
  tokens (projections, MLP, norms, the LM head) is exactly ``1 / S`` of it per token;
  causal attention does ``S (S + 1) / 2`` query-key pairs per head in the forward and
  ``S`` (more) for the new token; full attention ``S^2`` and ``S``. So the forward's
  kernels over ``S`` are at most the new token's work (the marginal cost of a convex
  work is at least its average).
* HBM: the step reads every parameter of the rank once (a cold cache, as the single
  device's compulsory traffic) and the rank's share of the KV cache,
  ``2 x layers x B x S x kv x bytes / (tp pp cp)`` per micro-batch: the new token's
  softmax weighs every cached key and every cached value is summed into its output.
  Without a recognised K/V width (Note [K/V width]) only the parameters are charged.
* Collectives per token: the plan's TP all-reduces (sequence-parallel pairs), PP
  sends and CP exchange with ``B`` tokens per micro-batch instead of ``B x S``
  (`solar.distributed.plan_collectives`).
* Memory: the KV cache is held (``activation_bytes``), per micro-batch in flight.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from solar.distributed.plan import ParallelPlan
from solar.distributed.structure import ModelStructure

__all__ = ["DecodeStep", "decode_step"]


@dataclass(frozen=True, slots=True)
class DecodeStep:
    """A decode step's facts.

    Attributes:
        context: ``S``, the cached tokens per sequence (the program's sequence length).
        structure: the program's structure with one token per sequence (``tokens`` =
            the batch): what the per-token collectives are counted on.
        kv_cache_bytes: the KV cache of one micro-batch, all layers, unsharded; 0 when
            no K/V width was recognised.
    """

    context: int
    structure: ModelStructure
    kv_cache_bytes: float

    def hbm_bytes(self, s: ModelStructure, plan: ParallelPlan, micro_batches: int) -> float:
        """The rank's compulsory DRAM bytes of one step: its parameters once, and its
        share of every micro-batch's KV cache (Note [Decode step])."""
        dense = (s.param_bytes - s.expert_param_bytes) / (plan.tp * plan.pp)
        expert = s.expert_param_bytes / (plan.tp * plan.pp * plan.ep)
        return dense + expert + self.cache_bytes(plan, micro_batches)

    def cache_bytes(self, plan: ParallelPlan, micro_batches: int) -> float:
        """The rank's share of the KV caches of ``micro_batches`` micro-batches."""
        return micro_batches * self.kv_cache_bytes / (plan.tp * plan.pp * plan.cp)


def decode_step(s: ModelStructure) -> DecodeStep:
    """The decode step of a forward over ``s.tokens`` tokens (Note [Decode step]).

    >>> from solar.distributed.structure import ModelStructure
    >>> s = ModelStructure(layers=2, stack="layers", hidden=8, heads=2, tokens=4 * 16,
    ...     batch=4, act_bytes=2, sub_blocks=2, moe=False, param_bytes=1e3,
    ...     expert_param_bytes=0.0, grad_bytes=0.0, optimizer_bytes=0.0,
    ...     saved_activation_bytes=0.0, replicated=frozenset(), stack_forward=frozenset(),
    ...     phase={}, kv_width=8)
    >>> d = decode_step(s)
    >>> d.context, d.structure.tokens, d.kv_cache_bytes   # 2 x 2 layers x 64 x 8 x 2
    (16, 4, 4096.0)
    """
    batch = s.batch
    if batch is None or batch < 1 or s.tokens % batch:  # no sequence axis: one token each
        return DecodeStep(context=1, structure=s, kv_cache_bytes=0.0)
    context = max(s.tokens // batch, 1)
    kv = 2.0 * s.layers * s.tokens * (s.kv_width or 0) * s.act_bytes
    return DecodeStep(context=context, structure=dataclasses.replace(s, tokens=batch),
                      kv_cache_bytes=kv)
