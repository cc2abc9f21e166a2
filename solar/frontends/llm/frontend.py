"""The LLM frontend behind the `Frontend` protocol.

Contract: ``PyTorch model file + LLMConfig -> FrontendResult``. The real program is
built and run once (`torch_reference`); its interface becomes the translation task,
and a reply is accepted only when the pipeline's `ReferenceCheck` passes on those
real values (its diagnostic otherwise goes back to the model). The same build serves
the reference and the measurer (Note [Model-file runs] in
`solar.frontends.protocol`). The notes record the model, the attempts and the tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from solar.diagnostics import UsageError
from solar.frontends.protocol import (
    FrontendOptions,
    FrontendResult,
    Progress,
    ReferenceCheck,
    ValidationPlan,
    refuse_unsupported,
    require_extra,
    require_python_file,
)
from solar.ir import Program
from solar.options import FrontendName

if TYPE_CHECKING:
    from solar.frontends.llm.result import TranslationResult
    from solar.measure import Timing

__all__ = ["LLMFrontend"]


class LLMFrontend:
    """Any PyTorch program, translated by an OpenAI-compatible endpoint."""

    @property
    def name(self) -> FrontendName:
        """``llm``."""
        return "llm"

    def load(
        self,
        path: Path,
        options: FrontendOptions,
        *,
        progress: Progress,
        check: ReferenceCheck | None = None,
    ) -> FrontendResult:
        """Translate the model file at ``path`` with ``options.llm``.

        Raises:
            UsageError: torch is not installed (E0908); no model configured (E0909).
            FrontendError: the model file cannot be built or run.
            LLMError: the endpoint failed or every reply was rejected (E06xx).
        """
        require_python_file(path, "llm")
        refuse_unsupported("llm", options, frozenset({"entry"}))
        require_extra("torch", "torch")
        if options.llm is None:
            raise UsageError("--frontend llm needs --model (or SOLAR_LLM_MODEL)", code="E0909")
        from solar.frontends.llm.reference import torch_reference
        from solar.frontends.llm.torch_task import program_task_from_torch
        from solar.frontends.llm.translate import translate_program

        ref = torch_reference(path, entry=options.entry)
        task = program_task_from_torch(ref.model, ref.args, outputs=ref.output_tensors)

        def accept(program: Program) -> None:
            if check is not None:
                check(program, ref.inputs, ref.outputs, time_budget_s=options.time_budget_s)

        progress("translating the program with the LLM frontend")
        result = translate_program(
            path.read_text(encoding="utf-8"),
            config=options.llm,
            task=task,
            check=accept if check is not None else None,
        )

        def reference() -> ValidationPlan:
            return ValidationPlan(result.program, ref.inputs, ref.outputs, "full")

        def measure() -> Timing:
            from solar.measure import measure_torch

            return measure_torch(ref.model, ref.args)

        return FrontendResult(
            name="llm",
            program=result.program,
            captured_with="llm (cache hit)" if result.from_cache else "llm",
            reference=reference,
            measure=measure,
            notes=_notes(result),
        )


def _notes(result: TranslationResult) -> tuple[str, ...]:
    """The model, the token totals and one line per attempt."""
    notes = [
        f"llm model {result.model}: {len(result.attempts)} attempt(s), "
        f"{result.prompt_tokens} prompt + {result.completion_tokens} completion tokens"
        + (" (replayed from cache)" if result.from_cache else "")
    ]
    for a in result.attempts:
        first = (a.diagnostic or "").strip().splitlines()[:1]
        notes.append(
            f"attempt {a.number}: {a.outcome}, {a.prompt_tokens or 0}+{a.completion_tokens or 0} "
            f"tokens, {a.latency_s or 0.0:.2f} s" + (f" — {first[0]}" if first else "")
        )
    return tuple(notes)
