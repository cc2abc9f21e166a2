"""The batch dimension of a program's inputs, and cutting it (the ``reduced-batch`` plan).

Contract: `leading_batch(args)` finds the leading dimension the tensor inputs share
(the batch); `cut_batch(instance, n)` returns the instance with every tensor input of
that leading dimension cut to its first ``n`` rows. A model file whose inputs are not
sized by module constants (``get_inputs()`` returning ``torch.randn(2, 3, 224, 224)``,
``--inputs``, a live module's example inputs) is validated this way when its real run
does not fit the reference budget (`solar.frontends.kit.reduced_batch_reference`).
The cut rows are the first rows of the very inputs the full program sees (same seed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from solar.frontends.pytorch.instance import Instance

__all__ = ["batch_of_shapes", "cut_batch", "leading_batch"]


def _tensor_leaves(args: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(list(args))
    return [x for x in leaves if isinstance(x, torch.Tensor)]


def batch_of_shapes(shapes: Iterable[Sequence[int]]) -> int | None:
    """The leading dimension most shapes share (ties: the largest), if above 1.

    >>> batch_of_shapes([(2, 3, 224, 224), (2,), (7, 7), ()])
    2
    >>> batch_of_shapes([(1, 3)]) is None
    True
    """
    dims = Counter(int(s[0]) for s in shapes if len(s) >= 1)
    ranked = sorted(((c, d) for d, c in dims.items() if d >= 2), reverse=True)
    return ranked[0][1] if ranked else None


def leading_batch(args: Any) -> int | None:
    """`batch_of_shapes` of the tensor leaves of ``args``."""
    return batch_of_shapes(tuple(x.shape) for x in _tensor_leaves(args))


def cut_batch(inst: Instance, n: int) -> Instance:
    """``inst`` with each tensor input whose leading dimension is the batch cut to ``n``."""
    import torch
    from torch.utils._pytree import tree_map

    batch = leading_batch(inst.args)
    if batch is None or n >= batch:
        return inst

    def cut(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.dim() >= 1 and int(x.shape[0]) == batch:
            return x[:n].clone()
        return x

    return replace(inst, args=tuple(tree_map(cut, a) for a in inst.args))
