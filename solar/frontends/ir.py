"""The IR frontend: a hand-written Affine Loop IR file, read as it is.

Contract: ``.alir file (+ optional reference .npz) -> FrontendResult``. The program is
parsed, not verified (the pipeline verifies every frontend's program). There is no
source program to run: validation needs ``--reference ref.npz`` (inputs and expected
outputs by tensor name), and nothing can be measured.
"""

from __future__ import annotations

from pathlib import Path

from solar.files import MAX_IR_BYTES, load_npz, read_text
from solar.frontends.protocol import (
    FrontendOptions,
    FrontendResult,
    Progress,
    ReferenceCheck,
    ValidationPlan,
    refuse_unsupported,
)
from solar.options import FrontendName

__all__ = ["IRFrontend", "load_npz"]


class IRFrontend:
    """Hand-written IR files (``.alir``)."""

    @property
    def name(self) -> FrontendName:
        """``ir``."""
        return "ir"

    def load(
        self,
        path: Path,
        options: FrontendOptions,
        *,
        progress: Progress,
        check: ReferenceCheck | None = None,
    ) -> FrontendResult:
        """Parse ``path``; the reference is ``options.reference_file`` when given.

        Raises:
            IRSyntaxError: the file does not parse.
            UsageError: the IR or reference file is missing or unreadable (E0901, E0902),
                or the reference is not a valid ``.npz`` archive (E0942).
        """
        from solar.ir import parse_program  # lark loads only when IR text is parsed

        refuse_unsupported("ir", options, frozenset({"reference_file", "sizes"}))

        program = parse_program(read_text(path, max_bytes=MAX_IR_BYTES), filename=str(path))
        if options.reference_file is None:
            return FrontendResult(
                name="ir",
                program=program,
                captured_with="hand-written IR",
                no_reference_reason=(
                    "hand-written IR has no source program; pass --reference ref.npz to validate"
                ),
                ir_sizes=dict(options.sizes),
            )
        data = load_npz(options.reference_file)
        outs = {t.name for t in program.tensors if t.role == "output"}

        def reference() -> ValidationPlan:
            return ValidationPlan(
                program,
                {k: v for k, v in data.items() if k not in outs},
                {k: v for k, v in data.items() if k in outs},
                sizes=dict(options.sizes),
            )

        return FrontendResult(
            name="ir",
            program=program,
            captured_with="hand-written IR",
            reference=reference,
            ir_sizes=dict(options.sizes),
        )
