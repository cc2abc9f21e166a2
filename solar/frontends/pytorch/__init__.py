"""The PyTorch frontend: any model file to Affine Loop IR, deterministically and offline.

Contract: ``model file | nn.Module + inputs -> TorchCapture -> LoweredProgram``, plus
reference values for validation. Torch is imported lazily inside functions, so
``import solar.frontends.pytorch`` works without torch installed.

Pipeline::

    capture = trace_model_file("samples/torch/matmul.py")      # ATen calls, fake tensors
    lowered = lower_capture(capture)                            # IR program + coverage
    inputs, outputs = reference_data(lowered, capture)          # real values by IR name

See capture.py (capture), recorder.py (recording), replay.py (real replay), driver.py
(lowering, naming, aliasing), reference.py (reference values, reduced sizes) and
registry.py (the lowering table API).
"""

from __future__ import annotations

from solar.frontends.kit import LoweredProgram, UncoveredOp, UncoveredValue
from solar.frontends.pytorch.capture import CaptureInfo, TorchCapture
from solar.frontends.pytorch.driver import lower_capture
from solar.frontends.pytorch.frontend import TorchFrontend
from solar.frontends.pytorch.loader import ProgramSource
from solar.frontends.pytorch.reference import (
    ReducedReference,
    reference_at_reduced_batch,
    reference_at_reduced_sizes,
    reference_data,
)
from solar.frontends.pytorch.registry import LOWERINGS, OpCall, OpFallback
from solar.frontends.pytorch.trace import trace_model_file, trace_module
from solar.frontends.pytorch.train_step import OptimizerSpec, TrainStep, phase_of_kernel

__all__ = [
    "LOWERINGS",
    "CaptureInfo",
    "LoweredProgram",
    "OpCall",
    "OpFallback",
    "OptimizerSpec",
    "ProgramSource",
    "ReducedReference",
    "TorchCapture",
    "TorchFrontend",
    "TrainStep",
    "UncoveredOp",
    "UncoveredValue",
    "lower_capture",
    "reference_at_reduced_batch",
    "phase_of_kernel",
    "reference_at_reduced_sizes",
    "reference_data",
    "trace_model_file",
    "trace_module",
]
