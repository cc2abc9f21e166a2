"""The child process of one sweep capture: ``python -m solar.sweep.worker JOB RESULT``.

Contract: reads a capture job (the model file, the analysis options, the size
binding to capture at, the points to bound, the archs and precision policies),
captures and prepares the program once (`solar.pipeline.prepare`, Note [One
preparation path]), validates it once, compiles its costs once
(`solar.pipeline.report_base`), then bounds every point it can serve by re-binding
sizes (`solar.pipeline.bounds_at`, a fraction of a millisecond each; Note [Symbolic
re-binding]) and, when asked, building each point's report (`solar.pipeline.report_at`)
into the job's ``reports_path`` (Note [Reports in one file]). The result lists the
rows, the points it could not serve (they need another capture) and the sizes it
could re-bind. Process setup, limits and the
catch-all boundary are `solar.batch.worker`'s (`serve`, `guard_user_code`).

Note [Symbolic re-binding]
~~~~~~~~~~~~~~~~~~~~~~~~~~
A point differs from the capture binding in some sizes. It is served without a new
capture when each of those is a *free* size of the captured program (``size B = 8``:
the IR is symbolic in it, so the same program, validation and compiled costs hold at
any value): IR files always; traced PyTorch/JAX programs for the module-level size
constants their frontend declares as IR sizes. An LLM-written program's size names
carry no such promise, so it is re-captured per binding. A point whose re-bound
sizes are invalid (E0221, a derived size not positive) is that point's ``error``.

Note [Reports in one file]
~~~~~~~~~~~~~~~~~~~~~~~~~~
A symbolic sweep binds a point in a fraction of a millisecond, so a thousand report
files made and read back in a scratch folder would cost more than the points. The
child writes them as lines of one file instead (``NAME<TAB>compact JSON``: compact
JSON holds no raw newline or tab), which `solar.sweep.task` splits; only the client
writes ``reports/NAME``. The table rows come from the same bounds (`PointBounds`), so
a row and its report always agree; without reports no report is built at all.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from solar.batch.worker import guard_user_code, serve
from solar.sweep.task import SWEEP_JOB_FORMAT

__all__ = ["main", "rebindable_sizes"]


def rebindable_sizes(frontend: str, program: object) -> frozenset[str]:
    """The sizes a program can be re-bound in without a new capture (Note [Symbolic
    re-binding])."""
    from solar.ir import IntLit, Program

    if frontend == "llm" or not isinstance(program, Program):
        return frozenset()
    return frozenset(d.name for d in program.sizes if isinstance(d.value, IntLit))


def _capture(job: Mapping[str, Any]) -> dict[str, object]:
    """Capture, prepare and validate once; bound every point it can serve (``job``: the
    JSON `solar.sweep.task` wrote)."""
    from solar.diagnostics import SolarError
    from solar.frontends.inputs import parse_input_shape
    from solar.hw import load_hardware_spec
    from solar.ir import resolve_sizes
    from solar.pipeline import (
        AnalyzeOptions,
        FileSource,
        bounds_at,
        effective_precision,
        prepare,
        report_at,
        report_base,
        source_info,
        validate_front,
    )
    from solar.sweep.journal import report_name

    opts = dict(job["options"])
    capture = {str(k): int(v) for k, v in dict(job["capture"]).items()}
    path = Path(str(job["file"]))
    options = AnalyzeOptions(
        archs=tuple(job["archs"]),
        cache=opts["cache"],
        frontend=opts["frontend"],
        sizes=capture,
        validate=opts["validate"],
        time_budget_s=float(opts["time_budget_s"]),
        entry=opts["entry"],
        entry_args=opts.get("entry_args"),
        inputs_file=Path(opts["inputs_file"]) if opts.get("inputs_file") else None,
        input_shapes=tuple(parse_input_shape(s) for s in opts.get("input_shapes", ())),
    )
    specs = [load_hardware_spec(a) for a in options.archs]
    start = time.monotonic()
    prepared = prepare(FileSource(path), options)
    front = prepared.front
    validation = validate_front(prepared, options, lambda _m: None)
    display = job.get("display") or str(path)
    source = source_info(FileSource(path), options, display=str(display))
    base = report_base(prepared, source, specs, validation)
    capture_s = time.monotonic() - start
    free = rebindable_sizes(front.name, prepared.program)
    status = "validation-failed" if validation.status in ("failed", "error") else "ok"
    error = validation.reason if status != "ok" else None
    rows: list[dict[str, object]] = []
    unserved: list[int] = []
    start = time.monotonic()
    # Note [Reports in one file]: every report of the capture, one line each
    with Path(str(job["reports_path"])).open("w", encoding="utf-8") as reports:
        for index, point in job["points"]:
            changed = {k: int(v) for k, v in point.items() if capture.get(k) != int(v)}
            if not set(changed) <= free:
                unserved.append(int(index))
                continue
            binding = "symbolic" if changed else "captured"
            for precision in job["precisions"]:
                used = effective_precision(front, precision)
                try:
                    sizes = resolve_sizes(prepared.program, {**front.ir_sizes, **changed})
                    at = bounds_at(base, sizes, precision=used, cache=options.cache)
                except SolarError as err:  # this binding only (E0221: a size not positive)
                    line = err.render().splitlines()[0]
                    rows.extend(
                        {"point": index, "precision": precision, "arch": spec.name,
                         "status": "error", "error": line, "binding": "symbolic"}
                        for spec in specs
                    )  # fmt: skip
                    continue
                name = None
                if job.get("reports", True):  # compact JSON: the report schema, unrounded
                    name = report_name(int(index), precision)
                    report = report_at(base, at, options)
                    reports.write(f"{name}\t{report.model_dump_json()}\n")
                rows.extend(
                    {"point": index, "precision": precision, "arch": spec.name, "status": status,
                     "binding": binding, "precision_used": used, "frontend": front.name,
                     "coverage": at.coverage.covered_bytes_fraction,
                     "validation": validation.status,
                     "flops": at.work.flops,
                     # the fused row's, on this arch; the cold compulsory traffic apart (issue 31)
                     "fused_dram_bytes": next(b.dram_bytes for b in bounds if b.model == "fused"),
                     "compulsory_dram_bytes": at.work.dram_bytes,
                     "bounds_s": {b.model: b.time_s for b in bounds},
                     "report": name, "error": error}
                    for spec, bounds in zip(specs, at.bounds, strict=True)
                )  # fmt: skip
    return {
        "status": "ok",
        "error": None,
        "rows": rows,
        "unserved": unserved,
        "rebindable": sorted(free),
        "capture_s": capture_s,
        "bind_s": time.monotonic() - start,
    }


def _run(job: dict[str, object]) -> dict[str, object]:
    return guard_user_code(job, lambda: _capture(job))


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``JOB RESULT`` paths. Returns the exit status (0 with a result)."""
    return serve(argv if argv is not None else sys.argv[1:], SWEEP_JOB_FORMAT, _run)


if __name__ == "__main__":
    import os

    _code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_code)
