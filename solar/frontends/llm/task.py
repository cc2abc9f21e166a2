"""What the LLM is asked to translate, and the tensor naming convention.

Contract: `TranslationTask` is a frozen value describing one translation: a
whole program (kind ``"program"``) or one operator the tracer could not lower
(kind ``"op"``), plus the exact program-level tensors the IR must declare.
`TranslationTask.describe()` is its canonical JSON-able form, part of the cache
key. `check_interface` checks a parsed, verified `Program` against the task.

Naming convention for whole programs (what validation binds; the kit's,
`solar.frontends.kit.naming`, shared with the tracers), see `program_io_names`:

* ``x0, x1, ...``: the tensors of ``get_inputs()``, in order;
* ``p_<key>``: parameters and persistent buffers, ``<key>`` being the
  ``state_dict()`` key with every character outside ``[A-Za-z0-9_]`` (the dots)
  replaced by ``_``;
* ``y0, y1, ...``: the tensors of the forward's return value, flattened in
  order (a single tensor is ``y0``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from solar.frontends.kit import input_name, output_name, param_name
from solar.frontends.llm.errors import E_BAD_CONFIG, E_INTERFACE, LLMConfigError, LLMReplyError
from solar.ir import KEYWORDS, DType, Program
from solar.ir.traversal import eval_int, resolve_sizes

__all__ = [
    "Framework",
    "ProgramIONames",
    "TaskKind",
    "TensorSpec",
    "TranslationTask",
    "check_interface",
    "program_io_names",
]

TaskKind = Literal["program", "op"]
Framework = Literal["torch", "jax", "python"]
SpecRole = Literal["input", "param", "output"]

_IR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KEYWORDS = KEYWORDS


@dataclass(frozen=True, slots=True)
class ProgramIONames:
    """IR names of a program's inputs, parameters and outputs, in order."""

    inputs: tuple[str, ...]
    params: tuple[str, ...]
    outputs: tuple[str, ...]


def program_io_names(n_inputs: int, param_keys: Sequence[str], n_outputs: int) -> ProgramIONames:
    """Apply the naming convention (module docstring) to a program's tensors.

    Args:
        n_inputs: number of tensors ``get_inputs()`` returns.
        param_keys: ``state_dict()`` keys, in order.
        n_outputs: number of output tensors (after flattening).

    Returns:
        The names; ``params[i]`` belongs to ``param_keys[i]``.

    Raises:
        LLMConfigError: two state-dict keys map to the same IR name (E0609).

    >>> program_io_names(2, ["fc.weight"], 1)
    ProgramIONames(inputs=('x0', 'x1'), params=('p_fc_weight',), outputs=('y0',))
    """
    params = tuple(param_name(k) for k in param_keys)
    seen: dict[str, str] = {}
    for key, name in zip(param_keys, params, strict=True):
        if name in seen:
            raise LLMConfigError(
                f"state_dict keys `{seen[name]}` and `{key}` both map to IR name `{name}`",
                code=E_BAD_CONFIG,
            )
        seen[name] = key
    return ProgramIONames(
        tuple(input_name(i) for i in range(n_inputs)),
        params,
        tuple(output_name(i) for i in range(n_outputs)),
    )


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """One program-level tensor the IR must declare.

    Attributes:
        name: IR name (see the naming convention).
        role: ``input``, ``param`` or ``output``.
        dtype: element type.
        shape: concrete shape at the task's sizes.
        origin: where it comes from in the source, shown to the model
            (e.g. ``get_inputs()[0]``, ``state_dict()['fc.weight']``).
    """

    name: str
    role: SpecRole
    dtype: DType
    shape: tuple[int, ...]
    origin: str = ""

    def decl_text(self) -> str:
        """The IR declaration, e.g. ``input x0 : f32[4, 8]``.

        >>> TensorSpec("y0", "output", DType.F32, ()).decl_text()
        'output y0 : f32[]'
        """
        dims = ", ".join(str(d) for d in self.shape)
        return f"{self.role} {self.name} : {self.dtype.value}[{dims}]"


@dataclass(frozen=True, slots=True)
class TranslationTask:
    """One translation request; build with `TranslationTask.for_program` or `.for_op`.

    Attributes:
        kind: ``"program"`` (a whole source file) or ``"op"`` (one operator).
        tensors: the program-level tensors the IR must declare, exactly.
        framework: the source language, shown to the model.
        entry: (program) how the source is run, e.g. the KernelBench call.
        op: (op) the operator's name, e.g. ``aten::cummax``.
        schema: (op) its schema string.
        scalars: (op) non-tensor arguments as ``(name, value text)``, inlined as literals.
        notes: extra instructions (e.g. "training mode"); part of the cache key.
    """

    kind: TaskKind
    tensors: tuple[TensorSpec, ...]
    framework: Framework = "torch"
    entry: str = ""
    op: str = ""
    schema: str = ""
    scalars: tuple[tuple[str, str], ...] = ()
    notes: str = ""

    def __post_init__(self) -> None:
        problems = _task_problems(self)
        if problems:
            raise LLMConfigError(
                "invalid translation task", code=E_BAD_CONFIG, notes=tuple(problems)
            )

    @classmethod
    def for_program(
        cls,
        tensors: Sequence[TensorSpec],
        *,
        framework: Framework = "torch",
        entry: str = "Model(*get_init_inputs())(*get_inputs())",
        notes: str = "",
    ) -> TranslationTask:
        """A whole-program task (tensor names per `program_io_names`)."""
        return cls("program", tuple(tensors), framework=framework, entry=entry, notes=notes)

    @classmethod
    def for_op(
        cls,
        op: str,
        schema: str,
        tensors: Sequence[TensorSpec],
        *,
        scalars: Sequence[tuple[str, str]] = (),
        framework: Framework = "torch",
        notes: str = "",
    ) -> TranslationTask:
        """A per-operator fallback task; tensor names are the tracer's choice."""
        return cls(
            "op",
            tuple(tensors),
            framework=framework,
            op=op,
            schema=schema,
            scalars=tuple(scalars),
            notes=notes,
        )

    def describe(self) -> dict[str, object]:
        """Canonical JSON-able description (the task part of the cache key)."""
        return {
            "kind": self.kind,
            "framework": self.framework,
            "entry": self.entry,
            "op": self.op,
            "schema": self.schema,
            "scalars": [list(s) for s in self.scalars],
            "notes": self.notes,
            "tensors": [
                [t.name, t.role, t.dtype.value, list(t.shape), t.origin] for t in self.tensors
            ],
        }


def _task_problems(task: TranslationTask) -> list[str]:
    problems = []
    names = [t.name for t in task.tensors]
    for spec in task.tensors:
        if not _IR_NAME.match(spec.name) or spec.name in _KEYWORDS:
            problems.append(f"`{spec.name}` is not a valid IR tensor name")
        if spec.role not in ("input", "param", "output"):
            problems.append(f"`{spec.name}`: role must be input, param or output")
        if any(d < 0 for d in spec.shape):
            problems.append(f"`{spec.name}`: negative dimension in {spec.shape}")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append(f"duplicate tensor names: {', '.join(dupes)}")
    if not any(t.role == "output" for t in task.tensors):
        problems.append("the task declares no output tensor")
    if task.kind == "op" and not task.op:
        problems.append("an op task needs the operator name")
    if task.kind not in ("program", "op"):
        problems.append(f"unknown task kind `{task.kind}`")
    return problems


def check_interface(program: Program, task: TranslationTask) -> None:
    """Check that ``program`` declares exactly the task's tensors.

    Every task tensor must be a program-level tensor with the same role, dtype
    and shape (dimensions evaluated at the program's default sizes), and the
    program may declare no other input, param or output.

    Args:
        program: a parsed and verified program.
        task: the task it answers.

    Raises:
        LLMReplyError: E0608, listing every difference; the span points at the
            first offending declaration when there is one.
    """
    sizes = resolve_sizes(program)
    declared = {t.name: t for t in program.tensors}
    problems: list[str] = []
    spans = []
    for spec in task.tensors:
        decl = declared.get(spec.name)
        if decl is None:
            problems.append(f"missing `{spec.decl_text()}`")
            continue
        shape = tuple(eval_int(d, sizes) for d in decl.shape)
        if (decl.role, decl.dtype, shape) != (spec.role, spec.dtype, spec.shape):
            dims = ", ".join(str(d) for d in shape)
            problems.append(
                f"`{spec.name}` is declared `{decl.role} {decl.name} : {decl.dtype.value}[{dims}]`"
                f" (at default sizes) but the task requires `{spec.decl_text()}`"
            )
            spans.append(decl.span)
    wanted = {t.name for t in task.tensors}
    missing = sorted(wanted - set(declared))
    for decl in program.tensors_with_role("input", "param", "output"):
        if decl.name not in wanted:
            close = difflib.get_close_matches(decl.name, missing, n=1, cutoff=0.5)
            hint = (
                f"did you mean `{close[0]}`?"
                if close
                else "use a `temp` tensor or a kernel `local` for intermediates"
            )
            problems.append(
                f"`{decl.role} {decl.name}` is not part of the task's interface; {hint}"
            )
            spans.append(decl.span)
    if problems:
        raise LLMReplyError(
            f"the program's tensors do not match the required interface ({len(problems)} "
            f"problem{'s' if len(problems) > 1 else ''})",
            code=E_INTERFACE,
            span=next((s for s in spans if s is not None), None),
            notes=tuple(problems),
        )
