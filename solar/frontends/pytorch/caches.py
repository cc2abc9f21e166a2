"""Function caches a capture fills, emptied when it ends.

Contract: `caches_filled_here_cleared()` is a context manager with no other effect than
calling ``cache_clear()`` on exit on each ``functools.lru_cache`` (``functools.cache``)
whose misses grew inside it and that holds a tensor.

Note [Function caches]: libraries cache tensors in process-wide ``lru_cache``s:
transformers' BEiT builds its relative-position index once per window size
(``compile_compatible_method_lru_cache``), rotary-embedding and grid helpers elsewhere
do the same. A capture runs the model over fake (or meta) tensors, so the cache then
holds a FakeTensor, which the real run that validates the IR gets back: its output is
fake and cannot be read (``.numpy() is not supported for tensor subclasses``), or a
re-capture at other sizes meets a tensor of another fake mode. A real capture leaves
real tensors for the next fake one the same way. Each capture therefore empties, on
exit, every cache it added entries to (its misses grew, or it was made during the
capture) that holds a tensor among its results (in them, or in the tuples, lists and
dicts they are); the next run computes those entries again, under its own mode.
Emptying a cache never changes what a pure cached function returns, only when it is
computed; caches of anything but tensors (a singleton whose identity matters, sympy's
and torch's own tables) are left alone.

The caches are found as the referrers of their type (one walk of the heap in C, as
`solar.frontends.pytorch.meta_mode` finds torch's dynamo wrappers), before and after.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Iterator
from typing import Any

__all__ = ["caches_filled_here_cleared"]


def _lru_caches() -> list[Any]:
    kind = getattr(functools, "_lru_cache_wrapper", None)
    if not isinstance(kind, type):  # pragma: no cover - every CPython has it
        return []
    return [obj for obj in gc.get_referrers(kind) if type(obj) is kind]


def _holds_tensor(cache: Any) -> bool:
    """Whether ``cache``'s entries hold a tensor, within three containers' depth."""
    import torch

    frontier = gc.get_referents(cache)
    for _ in range(_DEPTH):
        deeper = []
        for obj in frontier:
            if isinstance(obj, torch.Tensor):
                return True
            if isinstance(obj, tuple | list | dict):
                deeper.extend(gc.get_referents(obj))
        frontier = deeper
    return False


_DEPTH = 4
"""Containers walked down from a cache: its table, a result tuple, a nested list."""


@contextlib.contextmanager
def caches_filled_here_cleared() -> Iterator[None]:
    """Empty on exit each ``lru_cache`` the body added entries to (Note [Function caches])."""
    # the wrappers themselves are kept, so no id is reused by a cache made inside
    before = {id(w): (w, w.cache_info().misses) for w in _lru_caches()}
    try:
        yield
    finally:
        for w in _lru_caches():
            seen = before.get(id(w))
            grew = seen is None or w.cache_info().misses != seen[1]
            if grew and _holds_tensor(w):
                w.cache_clear()
