"""``solar ir``: check, format, run and validate Affine Loop IR files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from solar.cli.app import (
    SetOption,
    check_positive,
    echo_err,
    examples,
    ir_app,
    parse_sets,
    read_text,
)
from solar.diagnostics import SolarError, UsageError
from solar.files import MAX_IR_BYTES

if TYPE_CHECKING:
    import numpy as np

    from solar.ir import Program

__all__ = ["ir_check", "ir_fmt", "ir_run", "ir_validate"]


@ir_app.command(
    "check",
    epilog=examples(
        "solar ir check samples/ir/*.alir",
        exit_codes="Exit codes: 0 every file is valid; 1 a file has a syntax or verify error "
        "(each one's diagnostic on stderr); 2 usage or unreadable file.",
    ),
)
def ir_check(
    files: Annotated[
        list[Path], typer.Argument(metavar="FILE...", help="IR files (.alir) to verify.")
    ],
) -> None:
    """Parse and verify IR files; diagnostics go to stderr."""
    from solar.ir import parse_program, verify_program

    failed = 0
    for path in files:
        try:
            text = read_text(path, max_bytes=MAX_IR_BYTES)
            verify_program(parse_program(text, filename=str(path)))
        except SolarError as err:
            if err.exit_code != 1:
                raise
            echo_err(err.render())
            failed += 1
    if failed:
        echo_err(f"{failed} of {len(files)} file(s) failed")
        raise typer.Exit(1)
    echo_err(f"{len(files)} file(s) ok")


@ir_app.command(
    "fmt",
    epilog=examples(
        "solar ir fmt samples/ir/conv2d.alir",
        "solar ir fmt samples/ir/conv2d.alir > conv2d.fmt.alir  # comments are kept",
    ),
)
def ir_fmt(
    file: Annotated[Path, typer.Argument(help="IR file to print canonically.")],
) -> None:
    """Print the canonical form of an IR file on stdout, keeping its comments."""
    from solar.ir import format_program

    text = read_text(file, max_bytes=MAX_IR_BYTES)
    typer.echo(format_program(text, filename=str(file)), nl=False)


def _load_checked(file: Path) -> Program:
    from solar.ir import parse_program, verify_program

    program = parse_program(read_text(file, max_bytes=MAX_IR_BYTES), filename=str(file))
    verify_program(program)
    return program


@ir_app.command(
    "run",
    epilog=examples(
        "solar ir run samples/ir/matmul.alir --set M=64 --set N=64 --set K=64  # random inputs",
        "solar ir run samples/ir/matmul.alir --inputs examples/matmul_inputs.npz  # sizes: shapes",
        "solar ir run samples/ir/matmul.alir --set M=64 -o outputs.npz",
    ),
)
def ir_run(
    file: Annotated[Path, typer.Argument(help="IR file to execute.")],
    inputs: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help=".npz with one array per input/param, named as the IR declares them "
            "(default: seeded random values); a dimension declared as a bare size "
            "(`f32[M, K]`) takes the array's extent unless --set binds it.",
        ),
    ] = None,
    set_: SetOption = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the outputs to this exact path (.npz format)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for random inputs.")] = 0,
) -> None:
    """Execute IR with the vectorised numpy executor."""
    import numpy as np

    from solar.files import atomic_output, load_npz, prepare_output
    from solar.ir import resolve_sizes, sizes_from_shapes
    from solar.validate import execute_program, random_inputs

    program = _load_checked(file)
    sizes = parse_sets(set_)
    if output is not None:
        prepare_output(output)
    if program.world is not None:
        outs = _run_ranks(program, sizes, inputs, seed)
    elif inputs is not None:
        data = load_npz(inputs)
        sizes = sizes_from_shapes(program, {k: np.shape(v) for k, v in data.items()}, sizes)
    else:
        _check_memory(program, sizes)  # before drawing the inputs, not after
        data = random_inputs(program, resolve_sizes(program, sizes), np.random.default_rng(seed))
    if program.world is None:
        outs = execute_program(program, data, sizes=sizes)
    for name, arr in outs.items():
        finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
        stats = (
            f"min {finite.min():.6g} max {finite.max():.6g} mean {finite.mean():.6g}"
            if finite.size
            else "no finite values"
        )
        typer.echo(f"{name}: {arr.dtype}{list(arr.shape)}  {stats}")
    if output is not None:
        with atomic_output(output) as fh:  # a file object: numpy adds no `.npz` suffix
            np.savez(fh, **outs)  # type: ignore[arg-type]
        echo_err(f"wrote {output}")


def _run_ranks(
    program: Program, sizes: dict[str, int], inputs: Path | None, seed: int
) -> dict[str, np.ndarray]:
    """Every rank of a distributed program (docs/ir.md), on seeded random inputs drawn per
    rank (seed + rank); outputs named ``r<rank>.<name>``."""
    import numpy as np

    from solar.ir import resolve_sizes
    from solar.validate import execute_distributed, random_inputs

    if inputs is not None:
        raise UsageError(
            "--inputs takes one input set; a distributed program runs on random inputs per rank",
            code="E0909",
        )
    bound = resolve_sizes(program, sizes)
    assert program.world is not None
    data = [
        random_inputs(program, bound, np.random.default_rng(seed + rank))
        for rank in range(bound[program.world])
    ]
    ranks = execute_distributed(program, data, sizes=sizes)
    return {f"r{r}.{name}": arr for r, outs in enumerate(ranks) for name, arr in outs.items()}


def _check_memory(program: Program, sizes: dict[str, int]) -> None:
    """E0305 when running ``program`` at ``sizes`` would not fit the executor's budget.

    Raises:
        ResourceError: E0305.
    """
    from solar.diagnostics import ResourceError
    from solar.validate import estimate_memory_bytes
    from solar.validate.memory import memory_budget_bytes, over_budget_message

    needed, budget = estimate_memory_bytes(program, sizes), memory_budget_bytes()
    if needed > budget:
        raise ResourceError(
            over_budget_message(f"`{program.name}`", needed, budget),
            code="E0305",
            span=program.span,
            notes=("run it at smaller sizes with --set NAME=VALUE",),
        )


@ir_app.command(
    "validate",
    epilog=examples(
        "solar ir validate my.alir --reference ref.npz  # ref.npz: inputs and outputs by name",
        exit_codes="Exit codes: 0 outputs match; 1 mismatch or an IR error; 2 usage.",
    ),
)
def ir_validate(
    file: Annotated[Path, typer.Argument(help="IR file to validate.")],
    reference: Annotated[
        Path,
        typer.Option(
            metavar="FILE", help=".npz with the inputs/params and the expected outputs by name."
        ),
    ],
    set_: SetOption = None,
    time_budget: Annotated[float, typer.Option(help="Time budget (s).")] = 60.0,
) -> None:
    """Execute IR on reference inputs and compare with reference outputs (exit 1 on mismatch)."""
    import numpy as np

    from solar.files import load_npz
    from solar.ir import sizes_from_shapes
    from solar.validate import validate

    check_positive("--time-budget", time_budget)
    program = _load_checked(file)
    data = load_npz(reference)
    outs = {t.name for t in program.tensors if t.role == "output"}
    given = {k: v for k, v in data.items() if k not in outs}
    result = validate(
        program,
        given,
        {k: v for k, v in data.items() if k in outs},
        sizes=sizes_from_shapes(program, {k: np.shape(v) for k, v in given.items()},
                                parse_sets(set_)) or None,
        time_budget_s=time_budget,
    )
    for o in result.outputs:
        typer.echo(
            f"{o.name}: {o.status}  max abs {o.max_abs_error:.3g}  max rel "
            f"{o.max_rel_error:.3g}  ({o.tolerance})"
        )
    typer.echo(
        f"validation {result.status} ({result.strategy}, "
        f"{result.checked_fraction:.0%} checked, {result.wall_time_s:.2f} s)"
        + (f": {result.reason}" if result.reason else "")
    )
    if result.mismatch:
        echo_err(result.mismatch)
    if result.status != "passed":
        raise typer.Exit(1)
