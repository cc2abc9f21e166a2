"""The one set of input options of every command that analyses a program.

Contract: `EntryOption`, `EntryArgsOption`, `InputsOption` and `InputShapeOption` are
the option declarations (``--entry``, ``--entry-args``, ``--inputs``,
``--input-shape``), defined here once; `program_inputs` checks what was given and
returns a `ProgramInputs`, whose `ProgramInputs.fields` are `AnalyzeOptions` keyword
arguments. ``solar analyze``, ``bounds``, ``compare``, ``provision`` and ``sweep`` take
them all, so an error that advises ``--input-shape`` is never a dead end.

Error codes: E0912 a malformed ``--input-shape`` (`solar.frontends.inputs`); E0916
``--entry-args`` that are not a YAML/JSON list or mapping of plain values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeAlias

import typer

from solar.diagnostics import UsageError

if TYPE_CHECKING:  # solar.frontends imports numpy: not for --help (tests/test_startup.py)
    from solar.frontends.inputs import InputShape

__all__ = [
    "EntryArgsOption",
    "EntryOption",
    "InputShapeOption",
    "InputsOption",
    "ProgramInputs",
    "parse_entry_args",
    "program_inputs",
]

EntryOption: TypeAlias = Annotated[
    str | None,
    typer.Option(
        "--entry",
        help="What to analyse instead of `Model`: NAME in the file, or package.module:NAME "
        "(then no file is needed). A module class or a function that builds a module is "
        "built (with --entry-args), then called on the inputs; any other function is "
        "called on the inputs.",
    ),
]
EntryArgsOption: TypeAlias = Annotated[
    str | None,
    typer.Option(
        "--entry-args",
        metavar="YAML|FILE",
        help="Arguments that build the --entry: a YAML/JSON mapping (keyword) or list "
        "(positional), inline ('{num_classes: 10}') or a .yaml/.json file.",
    ),
]
InputsOption: TypeAlias = Annotated[
    Path | None,
    typer.Option(
        "--inputs",
        metavar="FILE",
        help="Inputs file instead of get_inputs(): .pt (torch.load weights_only: a tensor, a "
        "list of positional inputs or a dict of keyword inputs) or .npz (arrays arr_0, "
        "arr_1.. positional, other names keyword).",
    ),
]
InputShapeOption: TypeAlias = Annotated[
    list[str] | None,
    typer.Option(
        "--input-shape",
        metavar="SHAPE",
        help="An input by shape, [NAME=]D0,D1,...[:DTYPE], e.g. x=2,3,224,224:f32 "
        "(repeatable; random values, seeded).",
    ),
]


@dataclass(frozen=True, slots=True)
class ProgramInputs:
    """What to run and on what, as the input options gave it.

    Attributes:
        entry: ``--entry``.
        entry_args: ``--entry-args`` as canonical JSON (a list or an object), or None.
        inputs_file: ``--inputs``.
        input_shapes: ``--input-shape``, parsed.
    """

    entry: str | None = None
    entry_args: str | None = None
    inputs_file: Path | None = None
    input_shapes: tuple[InputShape, ...] = ()

    def fields(self) -> dict[str, object]:
        """`solar.pipeline.AnalyzeOptions` keyword arguments."""
        return {
            "entry": self.entry,
            "entry_args": self.entry_args,
            "inputs_file": self.inputs_file,
            "input_shapes": self.input_shapes,
        }


def program_inputs(
    entry: str | None,
    entry_args: str | None,
    inputs: Path | None,
    input_shape: list[str] | None,
) -> ProgramInputs:
    """The input options, checked.

    Raises:
        UsageError: E0912 a bad ``--input-shape``; E0916 bad ``--entry-args``.
    """
    from solar.frontends.inputs import parse_input_shape

    return ProgramInputs(
        entry=entry,
        entry_args=None if entry_args is None else parse_entry_args(entry_args),
        inputs_file=inputs,
        input_shapes=tuple(parse_input_shape(s) for s in input_shape or ()),
    )


def parse_entry_args(text: str) -> str:
    """``--entry-args`` (inline YAML/JSON, or a ``.yaml``/``.yml``/``.json`` file) as
    canonical JSON: a list (positional) or an object (keyword) of plain values.

    >>> parse_entry_args("{num_classes: 10, pretrained: false}")
    '{"num_classes": 10, "pretrained": false}'
    >>> parse_entry_args("[64, 32]")
    '[64, 32]'

    Raises:
        UsageError: E0916 anything else; E0901/E0902/E0943 an unreadable file.
    """
    from solar.files import DataError, parse_data, read_text

    path = Path(text)
    is_file = path.suffix in (".yaml", ".yml", ".json") and not text.lstrip().startswith(("{", "["))
    where = str(path) if is_file else "--entry-args"
    try:
        data = parse_data(read_text(path) if is_file else text, fmt="yaml")
    except DataError as err:
        raise UsageError(f"{where} is not YAML or JSON: {err}", code="E0916") from None
    if not isinstance(data, list | dict) or (isinstance(data, dict) and not all(
        isinstance(k, str) and k.isidentifier() for k in data
    )):
        raise UsageError(
            f"{where} must be a list (positional arguments) or a mapping of argument names "
            "(keyword arguments)",
            code="E0916",
            notes=("e.g. --entry-args '{num_classes: 10}' or --entry-args '[64, 32]'",),
        )
    try:
        return json.dumps(data)
    except (TypeError, ValueError) as err:  # a YAML date or set: not plain data
        raise UsageError(f"{where}: {err}", code="E0916") from None
