"""The kit's emitters: framework-free kernels for the op families both frontends share.

Contract: no torch, no jax. Each module is one family, shaped like the family's most
general primitive; a frontend's op module is an adapter from its op's arguments to the
emitter's inputs (axes, readers, output accesses), with the same module name on both
sides (``pytorch/ops_reduce.py`` and ``jaxfe/ops_reduce.py`` both adapt `reduce`).
"""

from __future__ import annotations
