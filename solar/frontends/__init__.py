"""Frontends: turn source programs (PyTorch, JAX, any code via an LLM) into IR.

Each frontend imports its framework lazily, so `solar --help` and the core tests
need neither torch nor jax.
"""

from __future__ import annotations

from solar.frontends.builder import KernelBuilder, ProgramBuilder, TensorRef, loop_nest

__all__ = ["KernelBuilder", "ProgramBuilder", "TensorRef", "loop_nest"]
