"""Frontends: turn source programs (PyTorch, JAX, any code via an LLM) into IR.

Contract: every frontend implements the `Frontend` protocol (``path + FrontendOptions ->
FrontendResult``) and is registered in `FRONTENDS` by name; `get_frontend` resolves a
``--frontend`` choice, ``auto`` included. Each frontend imports its framework lazily,
so `solar --help` and the core tests need neither torch nor jax. What the tracers
share (values, index arithmetic, the lowering table, the program builder, naming,
coverage) is `solar.frontends.kit`.
"""

from __future__ import annotations

from solar.frontends.ir import IRFrontend, load_npz
from solar.frontends.kit import KernelBuilder, ProgramBuilder, TensorRef
from solar.frontends.protocol import (
    Frontend,
    FrontendOptions,
    FrontendResult,
    ModuleFrontend,
    Progress,
    RealRunCheck,
    ReferenceCheck,
    ValidationPlan,
)
from solar.frontends.registry import (
    FRONTENDS,
    detect_frontend,
    get_frontend,
    get_module_frontend,
)

__all__ = [
    "FRONTENDS",
    "Frontend",
    "FrontendOptions",
    "FrontendResult",
    "IRFrontend",
    "ModuleFrontend",
    "KernelBuilder",
    "ProgramBuilder",
    "Progress",
    "RealRunCheck",
    "ReferenceCheck",
    "TensorRef",
    "ValidationPlan",
    "detect_frontend",
    "get_frontend",
    "get_module_frontend",
    "load_npz",
]
