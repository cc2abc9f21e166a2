"""What the recorder needs of torch.distributed: DTensor calls, shards and c10d arguments.

Contract: pure helpers for `solar.frontends.pytorch.capture` (Note [DTensor capture]);
torch is imported inside the functions only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["P2P_OPS", "has_dtensor", "local_shard", "p2p_outputs", "script_object_arg"]

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
