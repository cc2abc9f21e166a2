"""The ``solar`` command line: thin wrappers over the library.

Contract: each command parses its arguments, calls one library function and
renders the result. Data goes to stdout, diagnostics to stderr. Exit codes:
0 = done (and validation, if any, passed); 1 = the input is at fault (IR syntax or
verify errors, validation mismatch, a failed gate); 2 = usage, configuration or
internal error.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

from solar import __version__
from solar.diagnostics import SolarError, UsageError

__all__ = ["app", "main"]

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    help="SOLAR: speed-of-light bounds for PyTorch and JAX programs.",
)
ir_app = typer.Typer(no_args_is_help=True, help="Check, format and run Affine Loop IR files.")
specs_app = typer.Typer(no_args_is_help=True, help="Browse the hardware spec library.")
cache_app = typer.Typer(no_args_is_help=True, help="Manage the LLM translation cache.")
app.add_typer(ir_app, name="ir")
app.add_typer(specs_app, name="specs")
app.add_typer(cache_app, name="cache")


def _err(text: str) -> None:
    typer.echo(text, err=True)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}", code="E0901") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read {path}: {err}", code="E0902") from None


def _parse_sets(values: list[str] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--set expects NAME=VALUE, got `{item}`", code="E0903")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise UsageError(f"--set {name}: `{value}` is not an integer", code="E0903") from None
    return out


# ---------------------------------------------------------------------------- ir
@ir_app.command("check")
def ir_check(
    files: Annotated[list[Path], typer.Argument(help="IR files (.alir) to verify.")],
) -> None:
    """Parse and verify IR files; diagnostics go to stderr."""
    from solar.ir import parse_program, verify_program

    failed = 0
    for path in files:
        try:
            verify_program(parse_program(_read_text(path), filename=str(path)))
        except SolarError as err:
            if err.exit_code != 1:
                raise
            _err(err.render())
            failed += 1
    if failed:
        _err(f"{failed} of {len(files)} file(s) failed")
        raise typer.Exit(1)
    _err(f"{len(files)} file(s) ok")


@ir_app.command("fmt")
def ir_fmt(
    file: Annotated[Path, typer.Argument(help="IR file to print canonically.")],
) -> None:
    """Print the canonical form of an IR file on stdout."""
    from solar.ir import parse_program, print_program

    typer.echo(print_program(parse_program(_read_text(file), filename=str(file))), nl=False)


# ---------------------------------------------------------------------------- specs
def _fmt_flops(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e12:,.1f}"


@specs_app.command("list")
def specs_list() -> None:
    """List the bundled hardware specs (dense peaks, TFLOP/s)."""
    from solar.hw import Precision, list_hardware_specs

    header = f"{'name':<18} {'fp32 vec':>9} {'tf32':>8} {'bf16':>9} {'fp8':>9} {'DRAM TB/s':>10}  device"
    typer.echo(header)
    for s in list_hardware_specs():
        typer.echo(
            f"{s.name:<18} {_fmt_flops(s.peak_for(Precision.FP32, 'vector')):>9} "
            f"{_fmt_flops(s.peak_for(Precision.TF32)):>8} {_fmt_flops(s.peak_for(Precision.BF16)):>9} "
            f"{_fmt_flops(s.peak_for(Precision.FP8)):>9} {s.dram_bandwidth_bytes_per_s / 1e12:>10.3f}  "
            f"{s.display_name}"
        )


@specs_app.command("show")
def specs_show(
    name: Annotated[str, typer.Argument(help="Spec name (e.g. H100_SXM) or a YAML path.")],
) -> None:
    """Print one spec as YAML, with its sources."""
    from solar.hw import dump_hardware_spec, load_hardware_spec

    typer.echo(dump_hardware_spec(load_hardware_spec(name)), nl=False)


@app.command("calibrate")
def calibrate(
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the spec YAML.")],
    name: Annotated[str | None, typer.Option(help="Spec name (default local_<host>).")] = None,
    quick: Annotated[bool, typer.Option(help="Small, fast measurement.")] = False,
) -> None:
    """Measure this machine's bandwidth and matmul throughput; write a measured spec."""
    from solar.hw import calibrate_machine, dump_hardware_spec

    _err("measuring memory bandwidth and matmul throughput (takes ~10 s) ...")
    spec = calibrate_machine(name=name, quick=quick)
    output.write_text(dump_hardware_spec(spec), encoding="utf-8")
    _err(
        f"wrote {output}: {spec.dram_bandwidth_bytes_per_s / 1e9:.1f} GB/s, "
        + ", ".join(f"{p.value} {v / 1e9:.1f} GFLOP/s" for p, v in spec.vector_flops_per_s.items())
    )


def main() -> None:
    """Console entry point: run the app, turning errors into diagnostics and exit codes."""
    logging.basicConfig(
        level=logging.INFO if os.environ.get("SOLAR_VERBOSE") else logging.WARNING,
        format="%(message)s",
        stream=sys.stderr,
    )
    try:
        app(standalone_mode=False)
    except SolarError as err:
        _err(err.render())
        sys.exit(err.exit_code)
    except typer.Exit as ex:
        sys.exit(ex.exit_code)
    except typer.Abort:
        _err("aborted")
        sys.exit(2)
    except KeyboardInterrupt:
        _err("interrupted")
        sys.exit(130)
    except Exception as err:  # the one boundary where anything unexpected is turned into exit 2
        show = getattr(err, "show", None)
        if callable(show) and hasattr(err, "exit_code"):  # click/typer usage errors
            show()
            sys.exit(2)
        _err(f"error[E0999]: internal error: {type(err).__name__}: {err}")
        _err("  = note: this is a bug in SOLAR; set SOLAR_DEBUG=1 to see the traceback")
        if os.environ.get("SOLAR_DEBUG"):
            traceback.print_exc()
        sys.exit(2)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    if version:
        typer.echo(f"solar {__version__}")
        raise typer.Exit(0)
