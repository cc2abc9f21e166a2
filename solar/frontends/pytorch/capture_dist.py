"""What the recorder needs of torch.distributed: DTensor calls, shards and c10d arguments,
and what a distributed capture changes in torch while it runs.

Contract: pure helpers for `solar.frontends.pytorch.capture` (Note [DTensor capture]),
and `distributed_capture`, a context manager `solar.frontends.pytorch.distributed` holds
around each rank's capture and real run: DDP's gradient reduction in Python (Note [DDP
capture]), FSDP2's copy ops as ATen ops (Note [FSDP2 capture]), batched point-to-point
ops posted sends first. Everything it patches is restored on exit; torch is imported
inside the functions only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = [
    "P2P_OPS",
    "distributed_capture",
    "has_dtensor",
    "local_shard",
    "p2p_outputs",
    "script_object_arg",
]

P2P_OPS = frozenset({"c10d.send.default", "c10d.recv_.default"})
"""Point-to-point ops: recorded although they return no tensor (Note [Point-to-point
capture])."""

# Note [Point-to-point capture]
# ``c10d.send`` and ``c10d.recv_`` return only a ``Work`` handle, so the recorder would
# drop them as host calls. A send is recorded with no output (its lowering remembers
# the tensor and the destination); a receive is recorded as producing a new version of
# its buffer, which the lowering writes with a ``permute`` from the matching send.


def p2p_outputs(target: str, args: Any) -> list[Any]:
    """The tensors a point-to-point call produces: a receive's buffer, nothing for a send."""
    if target == "c10d.recv_.default":
        return list(args[0])
    return []


def script_object_arg(obj: Any) -> str:
    """A c10d argument by what it names: ``pg:<group name>`` for a process group,
    ``redop:<n>`` for a reduction (``RedOpType``: 0 sum, 1 avg, 2 product, 3 min, 4 max);
    other script objects by ``repr``."""
    kind = obj._type().name()
    if kind == "ProcessGroup":
        import torch.distributed as dist

        return f"pg:{dist.ProcessGroup.unbox(obj).group_name}"
    if kind == "ReduceOp":
        return f"redop:{int(obj.op())}"
    return repr(obj)


# Note [DTensor capture]
# A DTensor (tensor parallelism, FSDP2) runs each op as local ops on its shard plus
# the collectives its placements need (``_c10d_functional``). The program each rank
# launches is those local ops, so the recorder does not record a call on DTensors:
# returning ``NotImplemented`` from a dispatch mode hands the call to the tensor
# subclass, with the mode still active for what it runs. Parameters held as DTensors
# are registered as their local shards (`local_shard`), the tensors those ops read.


def has_dtensor(args: Any, kwargs: Any) -> bool:
    """True when a call's arguments hold a DTensor (Note [DTensor capture])."""
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten((args, kwargs))
    return any(hasattr(x, "_local_tensor") and hasattr(x, "device_mesh") for x in leaves)


def local_shard(t: Any) -> Any:
    """A DTensor's shard on this rank (the tensor its local ops read), else ``t``."""
    local = getattr(t, "_local_tensor", None)
    return local if local is not None and hasattr(t, "device_mesh") else t


# Note [DDP capture]
# DistributedDataParallel's reducer registers autograd hooks on the module's own
# parameter objects and all-reduces bucketed gradients from C++. A capture runs the
# model with its state swapped for fake tensors, so those hooks never fire and the
# reducer's copies never reach the recorder. While a distributed file is captured
# (and while its real gloo run is recorded), `DistributedDataParallel.forward` runs
# the wrapped module directly and gives each parameter that requires grad a one-shot
# post-accumulate-grad hook doing what the reducer does to it: scale the gradient by
# 1 / group size (into a new tensor: the gradient may be a view), all-reduce (sum) it
# over DDP's process group in place (``c10d.allreduce_``, lowered like
# ``dist.all_reduce``) and make it the parameter's ``.grad``. One all-reduce per
# parameter, in the order the gradients become ready: the bytes are those of DDP's
# buckets (a bucket holds each gradient once; the all-reduce bound is linear in the
# bytes, and per-launch latency is zero in the bound). Buffers (BatchNorm statistics):
# with ``broadcast_buffers=True`` (``forward_sync_buffers``, the default) DDP's
# ``_pre_forward`` broadcasts every module buffer from the group's rank 0 before the
# forward, unless the previous forward ran under ``no_sync()``; the replacement does the
# same with one in-place ``dist.broadcast`` per buffer, so the buffers' bytes are charged
# as DDP's coalesced broadcast moves them. A forward under ``no_sync()`` (gradient
# accumulation) or without grad gets no hooks, as DDP's reducer skips it. A DDP with a
# communication hook (``register_comm_hook``: fp16 compression, PowerSGD...), a buffer
# hook or mixed precision is refused (E0559): charging the tensors' own bytes could
# exceed what its communication moves.
# A gradient reaches its hook only through ``.backward()``: the step's ``loss.backward()``
# must run inside the file (an entry or forward that calls it).


def _ddp_forward(self: Any, *args: Any, **kwargs: Any) -> Any:
    import torch
    import torch.distributed as dist

    if self._comm_hooks or hasattr(self, "buffer_hook") or self.mixed_precision is not None:
        from solar.diagnostics import FrontendError

        raise FrontendError(
            "DistributedDataParallel with a communication hook, a buffer hook or mixed "
            "precision is not captured: the bytes it moves depend on them (a compressing "
            "hook moves fewer than the gradients)",
            code="E0559",
        )
    group = self.process_group
    scale = 1.0 / dist.get_world_size(group)
    sync = torch.is_grad_enabled() and self.require_backward_grad_sync  # False: no_sync()
    # DDP's _pre_forward (`broadcast_buffers` before torch 2.13 named it)
    if self.require_forward_param_sync and getattr(
            self, "forward_sync_buffers", getattr(self, "broadcast_buffers", True)):
        with torch.no_grad():
            for name, buf in self.module.named_buffers():
                if name not in self.parameters_to_ignore:
                    dist.broadcast(buf, src=dist.get_global_rank(group, 0), group=group)
    self.require_forward_param_sync = sync  # as DDP's _post_forward
    for p in self.module.parameters():
        if not p.requires_grad or not sync:
            continue
        handle: list[Any] = []

        def reduce(param: Any, handle: list[Any] = handle) -> None:
            handle.pop().remove()  # one step: a later run registers its own
            grad = param.grad * scale  # a new tensor: the gradient may be a view
            dist.all_reduce(grad, group=group)
            param.grad = grad

        handle.append(p.register_post_accumulate_grad_hook(reduce))
    return self.module(*args, **kwargs)


def _batch_sends_first(original: Any) -> Any:
    """``batch_isend_irecv`` with the sends of the batch posted first (Note
    [Point-to-point capture]: a receive pairs with the oldest unpaired send)."""
    import torch.distributed as dist

    def batch(ops: list[Any]) -> Any:
        ordered = sorted(ops, key=lambda op: op.op is not dist.isend)
        return original(ordered)

    return batch


# Note [FSDP2 capture]
# ``fully_shard`` packs a layer's parameter shards into one flat buffer
# (``fsdp.all_gather_copy_in``), all-gathers it (``c10d._allgather_base_``), and
# copies each parameter out of the gathered buffer (``fsdp.split_with_sizes_copy``);
# in the backward it packs the gradients (``fsdp.chunk_cat``) and reduce-scatters
# them (``c10d._reduce_scatter_base_``). The two copies write ``out=`` tensors and
# return nothing, so the recorder would drop them, and the copy-in writes the rank's
# slice of the gathered buffer. While a distributed file is captured, the three
# ``fsdp`` ops run as the ATen ops they are made of: the copy-in is the concatenation
# of the shards (the all-gather then writes every slice, this rank's included), the
# copy-out one ``copy_`` per parameter from a split of the buffer, the chunk-cat one
# ``copy_`` of the concatenated per-rank chunks. An uneven chunk-cat (FSDP pads it)
# keeps torch's op (reported uncovered). FSDP frees the gathered parameters' storage
# after use (``free_storage``): a real replay gives ``empty`` tensors fixed values from
# numpy, whose storage cannot be resized, so freeing one is skipped (memory only).


def _all_gather_copy_in(inputs: Any, output: Any, sizes: Any, numel: Any, rank: Any) -> Any:
    import torch

    return torch.cat([t.reshape(-1) for t in inputs]), output


def _split_with_sizes_copy(gathered: Any, sizes: Any, dim: int = 0, *, out: Any) -> None:
    import torch

    for target, part in zip(out, torch.split(gathered, list(sizes), dim), strict=True):
        target.copy_(part)


def _free_storage(original: Any) -> Any:
    def free_storage(tensor: Any) -> None:
        if tensor.untyped_storage().resizable():
            original(tensor)

    return free_storage


def _chunk_cat(original: Any) -> Any:
    def chunk_cat(tensors: Any, dim: int, num_chunks: int, *, out: Any) -> None:
        import torch

        if dim != 0 or any(t.shape[0] % num_chunks for t in tensors):
            return original(tensors, dim, num_chunks, out=out)  # type: ignore[no-any-return]
        rows = [t.reshape(num_chunks, -1) for t in tensors]
        out.copy_(torch.cat(rows, dim=1).reshape(out.shape))
        return None

    return chunk_cat


@contextlib.contextmanager
def distributed_capture() -> Iterator[None]:
    """What a distributed capture changes in torch while it runs: DDP's gradient
    reduction in Python (Note [DDP capture]), FSDP2's copy ops as ATen ops (Note
    [FSDP2 capture]), and batched point-to-point ops posted sends first (the batch's
    order does not matter to torch)."""
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp._fully_shard import (
        _fsdp_collectives,  # registers fsdp ops
        _fsdp_param,
    )
    from torch.nn.parallel import DistributedDataParallel

    assert _fsdp_collectives is not None
    free = _fsdp_param.free_storage
    _fsdp_param.free_storage = _free_storage(free)
    fsdp = torch.ops.fsdp
    names = ("all_gather_copy_in", "split_with_sizes_copy", "chunk_cat")
    saved = DistributedDataParallel.forward, dist.batch_isend_irecv
    ops = {n: getattr(fsdp, n) for n in names}
    DistributedDataParallel.forward = _ddp_forward  # type: ignore[method-assign]
    dist.batch_isend_irecv = _batch_sends_first(saved[1])
    patched = (_all_gather_copy_in, _split_with_sizes_copy, _chunk_cat(ops["chunk_cat"]))
    for name, fn in zip(names, patched, strict=True):
        setattr(fsdp, name, fn)
    try:
        yield
    finally:
        DistributedDataParallel.forward = saved[0]  # type: ignore[method-assign]
        dist.batch_isend_irecv = saved[1]
        for name, op in ops.items():
            setattr(fsdp, name, op)
        _fsdp_param.free_storage = free
