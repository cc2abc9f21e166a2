"""The lowering kit every frontend builds on: values, index arithmetic, the lowering
table, the program builder, the base driver, naming, coverage, the file loader and the
model-file side of the reduced-size reference.

Contract: no torch, no jax. A tracer (``solar.frontends.pytorch``,
``solar.frontends.jaxfe``) imports the user's file (`import_model_file`), records a
program, then walks it with a `LoweringDriver` subclass that looks each op up in its
`LoweringTable`, hands the lowering a `LowerCtx` (the one lowering context: a frontend
adds only its own argument access), rolls back and uncovers what the lowering rejects,
and returns a `LoweredProgram`. Everything those drivers and lowerings share lives here,
once.
"""

from __future__ import annotations

from solar.frontends.kit.builder import (
    KernelBuilder,
    ProgramBuilder,
    TensorRef,
    as_expr,
    sanitize_name,
)
from solar.frontends.kit.context import BuilderKernels, KernelHost, LowerCtx, Sink
from solar.frontends.kit.coverage import CoverageLog, UncoveredOp
from solar.frontends.kit.driver import Checkpoint, LoweringDriver, Unsupported
from solar.frontends.kit.dtypes import (
    FRAMEWORK_DTYPE_NAMES,
    IR_DTYPES,
    LOW_PRECISION,
    NUMPY_WIDENED,
    accumulate_dtype,
    cast,
    int_range,
    one,
    reduce_identity,
    zero,
)
from solar.frontends.kit.index import (
    Aff,
    LoopVars,
    Nest,
    all_of,
    as_int,
    broadcast_map,
    const_int,
    expand_param,
    fmax,
    fmin,
    guard,
    iadd,
    iadd_const_last,
    imul,
    imul_const_last,
    nest,
    range_guard,
    reshape_map,
)
from solar.frontends.kit.loader import (
    UserCode,
    check_overrides,
    guard_user_code,
    import_model_file,
    module_int_constants,
    user_frames,
)
from solar.frontends.kit.lowered import CondRegion, LoweredProgram, UncoveredValue
from solar.frontends.kit.naming import input_name, output_name, param_name, uncovered_name
from solar.frontends.kit.resize import (
    EXECUTOR_TIME_SHARE,
    BatchRecapture,
    Recapture,
    ReducedReference,
    executor_seconds,
    reduced_batch_reference,
    reduced_reference,
    reference_budget_bytes,
)
from solar.frontends.kit.symbolize import (
    SymbolicProgram,
    symbolic_notes,
    symbolize_sizes,
)
from solar.frontends.kit.table import LoweringTable, UnsupportedOpError, load_op_modules
from solar.frontends.kit.values import IndexMap, TensorInfo, shape_numel

__all__ = [
    "EXECUTOR_TIME_SHARE",
    "FRAMEWORK_DTYPE_NAMES",
    "IR_DTYPES",
    "LOW_PRECISION",
    "NUMPY_WIDENED",
    "Aff",
    "BatchRecapture",
    "BuilderKernels",
    "Checkpoint",
    "CondRegion",
    "CoverageLog",
    "IndexMap",
    "KernelBuilder",
    "KernelHost",
    "LoopVars",
    "LowerCtx",
    "LoweredProgram",
    "LoweringDriver",
    "LoweringTable",
    "Nest",
    "ProgramBuilder",
    "Recapture",
    "ReducedReference",
    "Sink",
    "TensorInfo",
    "TensorRef",
    "UncoveredOp",
    "UncoveredValue",
    "Unsupported",
    "UnsupportedOpError",
    "UserCode",
    "accumulate_dtype",
    "all_of",
    "as_int",
    "as_expr",
    "cast",
    "broadcast_map",
    "const_int",
    "executor_seconds",
    "expand_param",
    "fmax",
    "fmin",
    "guard",
    "iadd",
    "iadd_const_last",
    "check_overrides",
    "guard_user_code",
    "import_model_file",
    "symbolic_notes",
    "symbolize_sizes",
    "SymbolicProgram",
    "imul",
    "imul_const_last",
    "input_name",
    "int_range",
    "load_op_modules",
    "module_int_constants",
    "nest",
    "one",
    "output_name",
    "param_name",
    "range_guard",
    "reduce_identity",
    "reduced_batch_reference",
    "reduced_reference",
    "reference_budget_bytes",
    "reshape_map",
    "sanitize_name",
    "shape_numel",
    "uncovered_name",
    "user_frames",
    "zero",
]
