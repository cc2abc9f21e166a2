"""The typer application, its shared helpers and the entry point.

Contract: `app` (with its ``ir``, ``specs`` and ``cache`` groups) is what the command
modules register on; `main` runs it and is the one place where errors become
diagnostics and exit codes (see the package docstring).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import math
import os
import signal
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeAlias, TypeVar

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from solar.diagnostics import (
    ExecutionError,
    SolarError,
    UsageError,
    ValidationMismatchError,
)
from solar.options import DEFAULT_ARCH
from solar.outcome import InternalError, InterruptedRunError
from solar.version import __version__

if TYPE_CHECKING:
    from solar.report import ValidationInfo

__all__ = [
    "ARCH_HELP",
    "EXIT_CODES",
    "FRONTEND_HELP",
    "QUIET_HELP",
    "SET_HELP",
    "VALIDATE_HELP",
    "ArchOption",
    "QuietOption",
    "SetOption",
    "app",
    "cache_app",
    "check_positive",
    "deprecated_alias",
    "echo_err",
    "examples",
    "ir_app",
    "main",
    "parse_sets",
    "raise_for_validation",
    "read_text",
    "specs_app",
    "use_solar_commands",
]

T = TypeVar("T")

EXIT_CODES = (
    "Exit codes: 0 done (validation, if any, passed); 1 the input is at fault (IR error, "
    "validation mismatch, model error, failed gate); 2 usage, configuration or internal "
    "error; 128+N stopped by signal N."
)
"""The exit-code line every help page ends with (the package docstring has the contract)."""


def examples(*commands: str, exit_codes: str = EXIT_CODES) -> str:
    """A help page's epilog: ``$ command`` lines (``#`` starts a remark), then the exit codes.

    >>> print(examples("solar ir fmt a.alir  # canonical text"))
    Examples:
    <BLANKLINE>
      $ solar ir fmt a.alir  # canonical text
    <BLANKLINE>
    Exit codes: 0 done ...
    """
    lines = "\n".join(f"  $ {c}" for c in commands)
    return f"Examples:\n\n{lines}\n\n{exit_codes}"


ARCH_HELP = (
    f"Hardware spec: a name from `solar specs list` or a YAML file (repeatable). "
    f"Default: {DEFAULT_ARCH}."
)
QUIET_HELP = "No progress on stderr (stages are shown as they start otherwise)."
SET_HELP = "Rebind a size constant of the file: NAME=VALUE (repeatable)."
FRONTEND_HELP = (
    "Frontend: auto picks ir for .alir, jax for a file that imports jax/flax (not torch), "
    "else torch; llm translates through an OpenAI-compatible endpoint (docs/llm.md)."
)
VALIDATE_HELP = (
    "Validation mode: auto (full when it fits the time and memory budgets, else at reduced "
    "sizes, else sampled), full, sampled (a random sample of loop iterations), off."
)

ArchOption: TypeAlias = Annotated[
    list[str] | None, typer.Option("--arch", metavar="SPEC", help=ARCH_HELP)
]
"""``--arch`` of the commands that bound one program (default `DEFAULT_ARCH`)."""
SetOption: TypeAlias = Annotated[
    list[str] | None, typer.Option("--set", metavar="NAME=VALUE", help=SET_HELP)
]
"""``--set NAME=VALUE`` (parsed by `parse_sets`)."""
QuietOption: TypeAlias = Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)]
"""``--quiet`` of the commands that show stage progress (`solar.cli.progress`)."""


def deprecated_alias(old: str, new: str, value: T) -> T:
    """``value`` of a hidden, deprecated option spelling; a one-line note when it was used.

    >>> deprecated_alias("--no-cache", "--no-llm-cache", False)
    False
    """
    if value:
        echo_err(f"warning: {old} is deprecated; use {new}")
    return value


def _untyped_flags(params: list[Any]) -> list[Any]:
    """Note [Flag metavars]: typer tags every option with its Python type (``<bool>``);
    a flag takes no value, so its type column is left empty (``--help`` included), and
    a variadic argument is described by its metavar alone."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        elif isinstance(param, TyperArgument) and param.nargs != 1:
            # typer shows `<list[Path]>` for a variadic argument whatever its metavar; the
            # metavar (`FILE...`) already says it all
            setattr(param, "display_type_rich", _no_type)  # noqa: B010 (a method, shadowed)
    return params


def _no_type(ctx: Any) -> None:
    del ctx


NARROW_HELP_COLUMNS = 100
"""Note [Narrow help]: below this terminal width ``--help`` is click's plain layout.
Rich's option table gives ``--flag/--no-flag`` a column of its own and squeezes the
descriptions into a third of an 80-column terminal, a word or two a line; click's
layout wraps each description under its option at the full width."""


def _plain_epilog(command: Any, formatter: Any) -> None:
    """The epilog of click's layout line by line (example commands are not prose to
    join); a line wider than the terminal wraps under itself."""
    import textwrap

    if not command.epilog:
        return
    formatter.write_paragraph()
    width = max(40, formatter.width - 2)
    for line in command.epilog.splitlines():
        body = line.lstrip()
        indent = " " * (len(line) - len(body) + (2 if body.startswith("$") else 0))
        wrapped = textwrap.wrap(line, width, subsequent_indent=indent) or [""]
        formatter.write("".join(f"  {x}".rstrip() + "\n" for x in wrapped))


def _plain_help(command: Any, ctx: Any, formatter: Any, rich: Any) -> None:
    import shutil

    if shutil.get_terminal_size().columns < NARROW_HELP_COLUMNS:
        # click's own formatter: the class above typer's in the method order
        typer_cls = TyperCommand if isinstance(command, TyperCommand) else TyperGroup
        click_cls: Any = typer_cls.__mro__[1]
        click_cls.format_help(command, ctx, formatter)
    else:
        rich(ctx, formatter)


class SolarCommand(TyperCommand):
    """A command whose help shows flags without a type tag (Note [Flag metavars]) and
    stays readable on a narrow terminal (Note [Narrow help])."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _untyped_flags(super().get_params(ctx))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _plain_help(self, ctx, formatter, super().format_help)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        del ctx
        _plain_epilog(self, formatter)


class SolarGroup(TyperGroup):
    """A command group whose help shows flags without a type tag (Note [Narrow help])."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _untyped_flags(super().get_params(ctx))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _plain_help(self, ctx, formatter, super().format_help)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        del ctx
        _plain_epilog(self, formatter)


def use_solar_commands(typer_app: typer.Typer) -> None:
    """Build every command of ``typer_app`` (and its groups) as a `SolarCommand`."""
    for info in typer_app.registered_commands:
        if info.cls in (None, TyperCommand):  # typer's default: nobody asked for another
            info.cls = SolarCommand
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            use_solar_commands(group.typer_instance)


def _group(help_text: str, epilog: str | None = None) -> typer.Typer:
    return typer.Typer(no_args_is_help=True, help=help_text, epilog=epilog, cls=SolarGroup)


app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=SolarGroup,
    help="SOLAR: speed-of-light bounds for PyTorch and JAX programs.",
    epilog=examples(
        "solar analyze samples/torch/gpt_block.py  # bounds on the default H100_SXM",
        "solar analyze examples/kernelbench_mlp.py --arch A100_SXM_80GB --format json -o r.json",
        "solar ir fmt samples/ir/matmul.alir",
        "solar COMMAND --help  # each command's options and examples",
    ),
)
ir_app = _group(
    "Check, format and run Affine Loop IR files.",
    examples(
        "solar ir check samples/ir/*.alir",
        "solar ir run samples/ir/matmul.alir --set M=64 --set N=64 --set K=64",
    ),
)
specs_app = _group(
    "Browse the hardware spec library.",
    examples("solar specs list", "solar specs show H100_SXM"),
)
cache_app = _group(
    "Manage the LLM translation cache.",
    examples("solar cache clear", "solar cache clear --llm-cache-dir my-llm-cache/"),
)
app.add_typer(ir_app, name="ir")
app.add_typer(specs_app, name="specs")
app.add_typer(cache_app, name="cache")


def echo_err(text: str) -> None:
    """Write a line to stderr (diagnostics and progress; data goes to stdout)."""
    typer.echo(text, err=True)


def read_text(path: Path, *, max_bytes: int | None = None) -> str:
    """The UTF-8 text of ``path`` (`solar.files.read_text`).

    Raises:
        UsageError: E0901 missing file; E0902 unreadable, not a regular file or not
            UTF-8 text; E0943 over ``max_bytes`` (default `solar.files.MAX_TEXT_BYTES`).
    """
    from solar.files import MAX_TEXT_BYTES
    from solar.files import read_text as read

    return read(path, max_bytes=MAX_TEXT_BYTES if max_bytes is None else max_bytes)


def parse_sets(values: list[str] | None) -> dict[str, int]:
    """``--set NAME=VALUE`` flags as a size binding.

    Raises:
        UsageError: E0903 not ``NAME=VALUE``, or not an integer.
    """
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


def check_positive(option: str, value: float | None, *, maximum: float = math.inf) -> None:
    """Reject a numeric option that is not in ``(0, maximum]`` (NaN included).

    Raises:
        UsageError: E0905.
    """
    if value is not None and not 0.0 < value <= maximum:
        limit = "" if maximum == math.inf else f" and at most {maximum:g}"
        raise UsageError(f"{option} must be positive{limit}, got {value:g}", code="E0905")


def raise_for_validation(validation: ValidationInfo) -> None:
    """Turn a failed or errored validation into its diagnostic (exit 1).

    Raises:
        ValidationMismatchError: E0310, the IR's outputs differ from the program's.
        ExecutionError: E0300, the validation could not run (status ``error``).
    """
    notes = (validation.reason,) if validation.reason else ()
    if validation.status == "failed":
        raise ValidationMismatchError(
            f"validation failed ({validation.strategy}): the IR's outputs differ from the "
            "program's; the bounds are not confirmed",
            code="E0310",
            notes=notes,
        )
    if validation.status == "error":
        raise ExecutionError(
            f"validation could not run ({validation.strategy}): the bounds are not confirmed",
            code="E0300",
            notes=notes,
        )


_GC_THRESHOLDS = (20_000, 10, 10)
"""Note [Collector thresholds]: the cyclic collector's generation thresholds while a
command runs (CPython's default is ``(700, 10, 10)``). Importing torch and sympy leaves
a few million long-lived objects, and each full collection walks them all (0.2 s a
time on a loaded 2-core machine); with the default thresholds a small model's analysis
triggers several while it builds short-lived IR objects. Young collections every 20 000
allocations instead of 700 cut that to none for a small model (benchmarks/startup.py),
at no measurable change of peak memory: most garbage here is acyclic and freed by
reference counting. At exit, `gc.freeze` spares the interpreter's final collection,
which would walk the same heap once more only to free memory the OS takes back anyway.
"""


@contextlib.contextmanager
def _collector_policy() -> Iterator[None]:
    """Note [Collector thresholds]; the previous thresholds come back afterwards."""
    old = gc.get_threshold()
    gc.set_threshold(*_GC_THRESHOLDS)
    atexit.unregister(gc.freeze)  # registered once, however often `main` runs
    atexit.register(gc.freeze)  # atexit runs before the interpreter's final collection
    try:
        yield
    finally:
        gc.set_threshold(*old)


def main() -> None:
    """Console entry point: run the app, turning errors into diagnostics and exit codes."""
    logging.basicConfig(
        level=logging.INFO if os.environ.get("SOLAR_VERBOSE") else logging.WARNING,
        format="%(message)s",
        stream=sys.stderr,
    )
    from solar.streams import ignored_exceptions_as_warnings

    with _collector_policy(), ignored_exceptions_as_warnings():  # Note [Ignored exceptions]
        _run_app()


def _run_app() -> None:
    try:
        # With standalone_mode=False, click returns typer.Exit's code instead of raising.
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except SolarError as err:
        echo_err(err.render())
        sys.exit(err.exit_code)
    except typer.BadParameter as err:  # typer checked an option's value (choices, types)
        echo_err(_bad_parameter(err).render())
        sys.exit(2)
    except typer.Exit as ex:
        sys.exit(ex.exit_code)
    except typer.Abort:
        echo_err("aborted")
        sys.exit(2)
    except KeyboardInterrupt:  # Ctrl-C outside the guarded run of the user's program
        echo_err(InterruptedRunError(signal.SIGINT).render())
        sys.exit(130)
    except InternalError as err:  # a bug in SOLAR, raised in the guarded run's child
        echo_err(f"error[E0999]: internal error: {err.kind}: {err}")
        echo_err("  = note: this is a bug in SOLAR; set SOLAR_DEBUG=1 to see the traceback")
        if os.environ.get("SOLAR_DEBUG"):
            echo_err(err.traceback_text)
        sys.exit(2)
    except Exception as err:  # noqa: BLE001 — the one boundary: anything unexpected -> exit 2
        _unexpected(err)


def _unexpected(err: Exception) -> NoReturn:
    """Exit on an exception no handler expected: click's usage errors (E0904), a failure
    after the program changed the interpreter (E0534, Note [Shared interpreter]), else a
    bug in SOLAR (E0999)."""
    show = getattr(err, "show", None)
    if callable(show) and hasattr(err, "exit_code"):  # click/typer usage errors
        # unknown option, missing or extra argument (typer's vendored click)
        echo_err(click_usage(err).render())
        sys.exit(2)
    from solar.tampering import tampering_error

    tampered = tampering_error(err)
    if tampered is not None:
        echo_err(tampered.render())
        sys.exit(tampered.exit_code)
    echo_err(f"error[E0999]: internal error: {type(err).__name__}: {err}")
    echo_err("  = note: this is a bug in SOLAR; set SOLAR_DEBUG=1 to see the traceback")
    if os.environ.get("SOLAR_DEBUG"):
        traceback.print_exception(err)
    sys.exit(2)


def _bad_parameter(err: typer.BadParameter) -> UsageError:
    """typer's rejection of an option value, as a SOLAR usage diagnostic (E0904)."""
    text = err.format_message().replace("Value error, ", "").rstrip(".")
    notes = (f"see `{err.ctx.command_path} --help`",) if err.ctx is not None else ()
    return UsageError(text[:1].lower() + text[1:], code="E0904", notes=notes)


def click_usage(err: Any) -> UsageError:
    """click's rejection of a command line (an option it does not know, a missing or
    extra argument) as a SOLAR usage diagnostic (E0904), with click's suggestions.
    typer vendors its own click, so the error is recognised by its attributes."""
    notes = []
    option = getattr(err, "option_name", None)
    if option is not None and hasattr(err, "possibilities"):  # click's NoSuchOption
        text = f"no such option: {option}"
        if err.possibilities:
            notes.append("did you mean " + " or ".join(sorted(err.possibilities)[:3]) + "?")
    else:
        message = str(err.format_message()).rstrip(".")
        text = message[:1].lower() + message[1:]
    if getattr(err, "ctx", None) is not None:
        notes.append(f"see `{err.ctx.command_path} --help`")
    return UsageError(text, code="E0904", notes=tuple(notes))


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    if version:
        typer.echo(f"solar {__version__}")
        raise typer.Exit(0)
