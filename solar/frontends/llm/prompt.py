"""The prompt: a system message with rules and the IR reference, a user message with the task.

Contract: pure text builders. ``build_messages(source, task)`` returns the two
opening chat messages; ``repair_message(...)`` the user turn that sends a
rejected attempt's diagnostic back. The reference material (``docs/ir.md``,
the grammar, worked examples from ``samples/ir/``) is read at run time, so
docs edits reach the prompt without a code change. `PROMPT_VERSION` is part of
the cache key: bump it whenever the wording or structure below changes in a way
that should invalidate cached translations (docs and sample edits do not).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal, TypedDict

from solar.frontends.llm.task import TranslationTask
from solar.ir import FUNCTIONS, grammar_text

__all__ = [
    "EXAMPLE_SAMPLES",
    "PROMPT_VERSION",
    "Message",
    "build_messages",
    "ir_reference_text",
    "repair_message",
    "system_prompt",
    "user_prompt",
]

PROMPT_VERSION = "1"

EXAMPLE_SAMPLES = ("matmul", "softmax", "conv2d", "cumsum")
"""Worked examples from ``samples/ir/<name>.alir``, included when present."""

_MAX_EXAMPLE_BYTES = 8 * 1024
_ROOT = Path(__file__).resolve().parents[3]


class Message(TypedDict):
    """One chat message as the OpenAI chat-completions API takes it."""

    role: Literal["system", "user", "assistant"]
    content: str


def ir_reference_text() -> str:
    """``docs/ir.md`` from the source tree, else the copy packaged in the wheel, else ``""``."""
    source_tree = _ROOT / "docs" / "ir.md"
    if source_tree.is_file():
        return source_tree.read_text(encoding="utf-8")
    packaged = resources.files("solar") / "docs" / "ir.md"
    return packaged.read_text(encoding="utf-8") if packaged.is_file() else ""


def _examples() -> list[tuple[str, str]]:
    out = []
    for name in EXAMPLE_SAMPLES:
        path = _ROOT / "samples" / "ir" / f"{name}.alir"
        if path.is_file() and path.stat().st_size <= _MAX_EXAMPLE_BYTES:
            out.append((name, path.read_text(encoding="utf-8").strip()))
    return out


_RULES = """\
You translate programs into SOLAR's Affine Loop IR, a small loop language used to compute
speed-of-light bounds. Your output is parsed, verified, and then executed on the task's
inputs and compared with the source program's outputs; a rejected reply comes back to you
with its diagnostic.

# Rules
1. Reply with exactly one fenced code block tagged `alir` holding one complete program that
   starts with `solar-ir 1`. Anything outside the block is ignored; keep prose short.
2. Compute exactly what the source computes, for the given shapes and dtypes.
3. Declare the program-level tensors the task lists: exactly those names, roles, dtypes and
   shapes, no other `input`, `param` or `output`. You may name dimensions with `size`
   declarations whose default values reproduce the listed shapes. Intermediates are `temp`
   tensors (between kernels) or kernel `local`s (inside one kernel).
4. One `kernel` per operator or fused operator of the source, in execution order. Model the
   work the source does and nothing more: the analysis derives lower bounds on FLOPs and
   bytes from your program, so never add redundant computation or traffic.
5. A plain `for` promises its iterations are independent except through `+=`, `*=`, `max=`,
   `min=`. Use `seq for` for recurrences, scans and anything carried from one iteration to
   the next.
6. Write every element with `=` before reducing into it or reading it; initialise
   accumulators explicitly (`0.0` for `+=`, `-inf` for `max=`, `inf` for `min=`).
7. Only the functions listed below may be called. Use `if` guards for boundaries and
   padding, `select(c, a, b)` for value-dependent choices, casts like `f32(x)` for dtypes.
8. When a reply is rejected, answer with the complete corrected program, not a diff."""


def system_prompt() -> str:
    """The system message: rules, callable functions, IR reference, grammar, examples."""
    funcs = ", ".join(
        f"{name}({', '.join('abc'[i] for i in range(arity))})"
        for name, (arity, _flops) in sorted(FUNCTIONS.items())
    )
    parts = [_RULES, f"# Functions\n{funcs}"]
    reference = ir_reference_text().strip()
    if reference:
        parts.append(f"# IR reference\n\n{reference}")
    parts.append(f"# Grammar (Lark, LALR)\n\n```lark\n{grammar_text().strip()}\n```")
    examples = _examples()
    if examples:
        parts.append(
            "# Worked examples\n\n"
            + "\n\n".join(f"## {name}\n\n```alir\n{text}\n```" for name, text in examples)
        )
    return "\n\n".join(parts) + "\n"


def _interface(task: TranslationTask) -> str:
    width = max(len(t.decl_text()) for t in task.tensors)
    lines = []
    for spec in task.tensors:
        origin = f"  # {spec.origin}" if spec.origin else ""
        lines.append(f"{spec.decl_text().ljust(width)}{origin}".rstrip())
    return "```alir\n" + "\n".join(lines) + "\n```"


_CONVENTION = """\
Naming convention: `x<i>` is `get_inputs()[i]`; `p_<key>` is the `state_dict()` entry `<key>`
with `.` replaced by `_`; `y<i>` is the i-th tensor of the forward's return value (flattened
in order; a single returned tensor is `y0`)."""


def user_prompt(source: str, task: TranslationTask) -> str:
    """The first user message: the task, the required interface and the source."""
    if task.kind == "program":
        head = [
            "# Task: translate a whole program",
            f"Framework: {task.framework}. The program computes `{task.entry}`"
            if task.entry
            else f"Framework: {task.framework}.",
            _CONVENTION,
        ]
        source_title = "## Source"
    else:
        head = [
            "# Task: write the kernel of one operator",
            f"The tracer cannot lower `{task.op}`. Write a complete IR program that computes "
            "it for the tensors below.",
        ]
        if task.schema:
            head.append(f"Schema: `{task.schema}`")
        if task.scalars:
            consts = ", ".join(f"`{name} = {value}`" for name, value in task.scalars)
            head.append(f"Constant arguments (inline them as literals): {consts}")
        source_title = "## Reference implementation"
    if task.notes:
        head.append(f"Notes: {task.notes}")
    body = [
        "\n\n".join(head),
        "## Required interface\n\nDeclare exactly these program-level tensors "
        "(dimensions at the default sizes):\n\n" + _interface(task),
        f"{source_title}\n\n```python\n{source.rstrip()}\n```",
    ]
    return "\n\n".join(body) + "\n"


def build_messages(source: str, task: TranslationTask) -> list[Message]:
    """The opening conversation: system (rules + reference) and user (task + source)."""
    return [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": user_prompt(source, task)},
    ]


_REPAIR_HEADS = {
    "no-ir": "Your reply did not contain an IR program.",
    "too-large": "Your reply was too large and was discarded.",
    "syntax-error": "The IR does not parse.",
    "verify-error": "The IR parses but is not well formed.",
    "interface-mismatch": "The IR does not declare the required tensors.",
    "execution-error": "Executing the IR failed.",
    "validation-mismatch": "The IR runs but computes different values from the source program.",
    "check-error": "The IR was rejected by validation.",
}


def repair_message(attempt: int, outcome: str, diagnostic: str) -> str:
    """The user turn that returns attempt ``attempt``'s diagnostic to the model.

    >>> print(repair_message(1, "no-ir", "error[E0611]: no IR").splitlines()[0])
    Attempt 1 was rejected. Your reply did not contain an IR program.
    """
    head = _REPAIR_HEADS.get(outcome, "The IR was rejected.")
    return (
        f"Attempt {attempt} was rejected. {head}\n\n```text\n{diagnostic.rstrip()}\n```\n\n"
        "Reply with the complete corrected program in one ```alir block."
    )
