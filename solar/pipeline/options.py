"""What an analysis is asked to do, and of what: `AnalyzeOptions` and `Source`.

Contract: frozen values the CLI, the batch and sweep workers and the Python API build
once; every stage *derives* what it needs from them (`AnalyzeOptions.frontend_options`
for the frontend, `PreparedProgram.precision` for the policy the bounds use) and none
is changed on the way (Note [One preparation path] in `solar.pipeline.prepare`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from solar.frontends import FrontendOptions
from solar.options import (
    DEFAULT_ARCH,
    CacheState,
    FrontendChoice,
    OptimizerChoice,
    PrecisionPolicy,
    ValidateMode,
)
from solar.report import InputInfo

if TYPE_CHECKING:
    from solar.distributed import DistributedRequest
    from solar.frontends.inputs import InputShape
    from solar.frontends.llm import LLMConfig

__all__ = ["AnalyzeOptions", "EntrySource", "FileSource", "ModuleSource", "Source", "source_info"]


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    """Everything `analyze` needs besides the source (mirrors the CLI flags).

    The fields a frontend reads have `FrontendOptions`' names and meaning
    (`frontend_options` derives it; a test keeps the two in step).
    """

    archs: tuple[str, ...] = (DEFAULT_ARCH,)
    precision: PrecisionPolicy = "default"
    cache: CacheState = "warm"
    frontend: FrontendChoice = "auto"
    ir_file: Path | None = None
    sizes: Mapping[str, int] = field(default_factory=dict)
    validate: ValidateMode = "auto"
    time_budget_s: float = 60.0
    # real runs above this are re-captured smaller; None: a share of MemAvailable
    reference_budget_bytes: int | None = None
    measured_ms: float | None = None
    measure: bool = False
    entry: str | None = None
    entry_args: str | None = None  # JSON/YAML arguments that build the entry
    inputs_file: Path | None = None
    input_shapes: tuple[InputShape, ...] = ()
    reference_file: Path | None = None
    train: bool = False
    train_step: bool = False
    optimizer: OptimizerChoice = "auto"
    include_ir: bool = False
    save_ir: Path | None = None
    llm: LLMConfig | None = None
    distributed: DistributedRequest | None = None

    @property
    def frontend_options(self) -> FrontendOptions:
        """The frontend's options: the fields both types name, and two decisions.

        ``op_fallback``: the tracer asks the LLM for the ops it cannot lower only where it
        was chosen or may be (``auto``); an explicit ``--frontend llm`` translates the
        whole program. ``symbolic_sizes``: a distributed plan is bounded at the sizes
        given; formulas in them would cost a re-capture per size constant of a model
        that may have a hundred layers.
        """
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(FrontendOptions)
                  if f.name in _SHARED}  # fmt: skip
        return FrontendOptions(**shared, op_fallback=self.frontend in ("auto", "torch"),
                               symbolic_sizes=self.distributed is None)


_SHARED = frozenset(f.name for f in dataclasses.fields(AnalyzeOptions))


@dataclass(frozen=True, slots=True)
class FileSource:
    """A model file (``.py``) or an IR file (``.alir``)."""

    path: Path


@dataclass(frozen=True, slots=True)
class EntrySource:
    """An importable ``package.module:attr`` (``--entry`` without a file; PyTorch)."""

    entry: str


@dataclass(frozen=True, slots=True)
class ModuleSource:
    """A live module (or callable) and its example inputs (the Python API)."""

    module: object
    example_inputs: Sequence[object]
    kwargs: Mapping[str, object] | None = None


Source: TypeAlias = FileSource | EntrySource | ModuleSource
"""What an analysis reads; `solar.frontends.get_frontend` picks its frontend."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def source_info(
    source: Source, options: AnalyzeOptions, *, display: str | None = None
) -> InputInfo:
    """The report's ``input`` section for ``source`` (``display``: the path to show)."""
    match source:
        case FileSource(path):
            return InputInfo(path=display or str(path), sha256=_sha256(path.read_bytes()),
                             entry=options.entry)
        case EntrySource(entry):
            return InputInfo(path=f"<entry {entry}>", sha256=_sha256(entry.encode()), entry=entry)
        case ModuleSource(module):
            name = type(module).__name__
            return InputInfo(path=f"<module {name}>", sha256=_sha256(name.encode()), entry=None)
