"""The IR frontend: a hand-written Affine Loop IR file, read as it is.

Contract: ``.alir file (+ optional reference .npz) -> FrontendResult``. The program is
parsed, not verified (the pipeline verifies every frontend's program). There is no
source program to run: validation needs ``--reference ref.npz`` (inputs and expected
outputs by tensor name), and nothing can be measured.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from solar.diagnostics import UsageError
from solar.frontends.protocol import (
    Arrays,
    FrontendOptions,
    FrontendResult,
    Progress,
    ReferenceCheck,
    ValidationPlan,
)
from solar.ir import parse_program
from solar.options import FrontendName

__all__ = ["IRFrontend", "load_npz"]


def load_npz(path: Path) -> Arrays:
    """Every array of an ``.npz`` file, by name.

    Raises:
        UsageError: E0901 missing file; E0902 not a readable ``.npz``.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: np.asarray(data[k]) for k in data.files}
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}", code="E0901") from None
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot read {path} as .npz: {err}", code="E0902") from None


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
            UsageError: the reference file is missing or unreadable (E0901, E0902).
        """
        program = parse_program(path.read_text(encoding="utf-8"), filename=str(path))
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
