"""Parse XLA's HLO text (one device's program after SPMD partitioning) into typed values.

Contract: ``text -> HloModule`` (`parse_hlo`), through the Lark grammar
``grammars/hlo.lark`` and one `Transformer`. Instructions keep their attributes as
generic values (`Group`, `Bracket`, `Keyed`, words as ``str``); the decoders below read
the ones the replay needs (`ints`, `replica_groups`, `slice_bounds`, ...). Each
instruction carries its span in the HLO text and the user's source line from its
``stack_frame_id`` (the module's FileLocations). Bad text is a `FrontendError` E0570
with a span, never a traceback.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

from solar.diagnostics import FrontendError, Source, Span

__all__ = [
    "ArrayType",
    "Bracket",
    "Computation",
    "Group",
    "HloModule",
    "HloType",
    "Instruction",
    "IotaGroups",
    "Keyed",
    "MeshGroups",
    "SliceRange",
    "SourceLine",
    "TupleType",
    "hlo_parser",
    "ints",
    "literal_values",
    "parse_hlo",
    "replica_groups",
    "slice_bounds",
]

MAX_HLO_BYTES = 256 * 1024 * 1024
"""Larger HLO text is refused (E0570): XLA prints far less for any program SOLAR bounds."""


@dataclass(frozen=True, slots=True)
class ArrayType:
    """``f32[4,16]{1,0}``: the element type and dimensions (the layout is not kept)."""

    dtype: str
    dims: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TupleType:
    """``(f32[], s32[4])``."""

    elements: tuple[HloType, ...]


HloType: TypeAlias = ArrayType | TupleType


@dataclass(frozen=True, slots=True)
class Group:
    """``{a, b c}``: items separated by commas or spaces."""

    items: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class Bracket:
    """``[a, b]``."""

    items: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class Keyed:
    """``key=value`` inside a group (or ``"key": value`` in a JSON backend config)."""

    key: str
    value: Value


@dataclass(frozen=True, slots=True)
class SliceRange:
    """``0:4`` or ``0:16:2`` in a ``slice={...}`` attribute."""

    start: int
    stop: int
    step: int


@dataclass(frozen=True, slots=True)
class IotaGroups:
    """``[G,S]<=[dims]T(perm)``: ``iota(prod(dims)).reshape(dims).transpose(perm)``
    read as ``G`` groups of ``S`` partitions."""

    shape: tuple[int, ...]
    dims: tuple[int, ...]
    perm: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MeshGroups:
    """``mesh['a'=2,'b'=2], device_ids=(...) {'b'}``: groups over the named axes of a
    mesh whose row-major position ``i`` holds device ``device_ids[i]``."""

    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...]
    over: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Ref:
    """``%name`` as an attribute value (``to_apply=%add``)."""

    name: str


Value: TypeAlias = (
    str | Group | Bracket | Keyed | SliceRange | IotaGroups | MeshGroups | Ref
)


@dataclass(frozen=True, slots=True)
class SourceLine:
    """Where the user's code made an instruction (a module's FileLocations entry)."""

    file: str
    line: int
    function: str


@dataclass(frozen=True, slots=True)
class Instruction:
    """``ROOT? %name = type opcode(operands), attrs``; a constant's or parameter's
    literal argument is ``literal``."""

    name: str
    type: HloType
    opcode: str
    operands: tuple[str, ...]
    attrs: Mapping[str, Value]
    literal: Value | None = None
    root: bool = False
    source: SourceLine | None = field(default=None, compare=False)
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Computation:
    """A named computation; ``root`` is its ROOT instruction (the last when none says so)."""

    name: str
    params: tuple[tuple[str, HloType], ...]
    instructions: tuple[Instruction, ...]
    entry: bool = False

    @property
    def root(self) -> Instruction:
        return next((i for i in self.instructions if i.root), self.instructions[-1])


@dataclass(frozen=True, slots=True)
class HloModule:
    """The computations of one module by name, and the entry computation's name."""

    computations: Mapping[str, Computation]
    entry: str

    @property
    def entry_computation(self) -> Computation:
        return self.computations[self.entry]


@functools.cache
def hlo_parser() -> Lark:
    """The strict LALR parser of ``grammars/hlo.lark`` (built once)."""
    from solar.ir.grammar import grammar_dir

    return Lark.open(
        str(grammar_dir() / "hlo.lark"),
        start="start",
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=False,
        strict=True,
        cache=False,
    )


def _error(message: str, span: Span | None = None) -> FrontendError:
    return FrontendError(message, code="E0570", span=span)


def ints(value: Value | None) -> tuple[int, ...]:
    """The integers of ``{1,0}`` (or one word ``3``).

    Raises:
        FrontendError: not a list of integers (E0570).
    """
    if value is None:
        return ()
    items = value.items if isinstance(value, Group | Bracket) else (value,)
    try:
        return tuple(int(str(v)) for v in items if isinstance(v, str))
    except ValueError:
        raise _error(f"expected integers, found {value}") from None


def _iota(dims: tuple[int, ...], perm: tuple[int, ...]) -> np.ndarray:
    size = int(np.prod(dims)) if dims else 0
    arr = np.arange(size).reshape(dims)
    return arr.transpose(perm) if perm else arr


def replica_groups(value: Value | None, world: int) -> tuple[tuple[int, ...], ...]:
    """The partition groups of a ``replica_groups=`` attribute, in its order: explicit
    ``{{0,1},{2,3}}``, iota ``[2,2]<=[4]`` or mesh ``mesh[...] {'a'}``; absent or
    ``{}`` is one group of all ``world`` partitions.

    >>> replica_groups(IotaGroups((2, 2), (2, 2), (1, 0)), 4)
    ((0, 2), (1, 3))
    >>> replica_groups(MeshGroups((("a", 2), ("b", 2)), (), ("a",)), 4)
    ((0, 2), (1, 3))
    """
    if value is None or (isinstance(value, Group) and not value.items):
        return (tuple(range(world)),)
    if isinstance(value, IotaGroups):
        flat = _iota(value.dims, value.perm).reshape(-1)
        return tuple(tuple(int(p) for p in g) for g in flat.reshape(value.shape))
    if isinstance(value, MeshGroups):
        shape = tuple(s for _, s in value.axes)
        names = [n for n, _ in value.axes]
        ids = np.asarray(value.device_ids or range(int(np.prod(shape)))).reshape(shape)
        over = [names.index(a) for a in value.over]
        rest = [k for k in range(len(names)) if k not in over]
        size = int(np.prod([shape[k] for k in over]))
        moved = ids.transpose(rest + over).reshape(-1, size)
        return tuple(tuple(int(p) for p in g) for g in moved)
    if isinstance(value, Group) and all(isinstance(g, Group) for g in value.items):
        return tuple(ints(g) for g in value.items)
    raise _error(f"replica groups {value} are not a form SOLAR reads")


def slice_bounds(value: Value | None) -> tuple[SliceRange, ...]:
    """The ranges of ``slice={[0:4], [0:16:2]}``."""
    if not isinstance(value, Group):
        raise _error(f"expected slice bounds, found {value}")
    out = []
    for item in value.items:
        inner = item.items[0] if isinstance(item, Bracket) and len(item.items) == 1 else item
        if not isinstance(inner, SliceRange):
            raise _error(f"expected a slice range, found {item}")
        out.append(inner)
    return tuple(out)


def _literal_number(word: str) -> float | int | bool:
    table: dict[str, float | bool] = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan,
                                      "-nan": np.nan, "true": True, "false": False}
    if word in table:
        return table[word]
    try:
        return int(word)
    except ValueError:
        pass
    try:
        return float(word)
    except ValueError:
        raise _error(f"`{word}` is not a number") from None


def literal_values(value: Value | None) -> Any:
    """The number or nested list of numbers of a ``constant(...)`` literal (``0``,
    ``{1, 2}``, ``-inf``)."""

    def walk(v: Value) -> Any:
        if isinstance(v, Group):
            return [walk(i) for i in v.items]
        if isinstance(v, str):
            return _literal_number(v)
        raise _error(f"`{v}` is not a literal")

    if value is None:
        raise _error("a constant without a literal")
    return walk(value)


_SECTION = re.compile(r"(\d+)\s+(.*)")
_FIELD = re.compile(r"(\w+)=(\d+)")


class _ToModule(Transformer[Token, Any]):
    """Builds the `HloModule` (the only code that sees lark trees)."""

    def __init__(self, source: Source) -> None:
        super().__init__()
        self.source = source
        self.sections: dict[str, dict[int, str]] = {}

    def span(self, meta: Any) -> Span | None:
        if getattr(meta, "empty", True):
            return None
        return Span(self.source, meta.start_pos, meta.end_pos)

    # types
    def array_type(self, children: list[Token]) -> ArrayType:
        text = str(children[0])
        dtype, _, rest = text.partition("[")
        body = rest.split("]", 1)[0]
        try:
            dims = tuple(int(d) for d in body.split(",") if d)
        except ValueError:
            raise _error(f"dynamic shape `{text}`") from None
        return ArrayType(dtype, dims)

    def tuple_type(self, children: list[HloType]) -> TupleType:
        return TupleType(tuple(children))

    # values
    def word(self, c: list[Token]) -> str:
        return str(c[0])

    literal_word = word

    def string(self, c: list[Token]) -> str:
        return str(c[0])[1:-1]

    def ref(self, c: list[Token]) -> Ref:
        return Ref(str(c[0])[1:])

    def group(self, c: list[Value]) -> Group:
        return Group(tuple(c))

    def bracket(self, c: list[Value]) -> Bracket:
        return Bracket(tuple(c))

    def keyed(self, c: list[Any]) -> Keyed:
        key = str(c[0])
        return Keyed(key[1:-1] if key.startswith('"') else key, c[1])

    def slice_range(self, c: list[Token]) -> SliceRange:
        n = [int(str(t)) for t in c]
        return SliceRange(n[0], n[1], n[2] if len(n) > 2 else 1)

    def iota_groups(self, c: list[Token]) -> IotaGroups:
        m = re.fullmatch(r"\[([\d,]*)\]<=\[([\d,]*)\](?:T\(([\d,]*)\))?", str(c[0]))
        assert m is not None
        nums = [tuple(int(x) for x in (g or "").split(",") if x) for g in m.groups()]
        return IotaGroups(nums[0], nums[1], nums[2])

    def mesh_groups(self, c: list[Token]) -> MeshGroups:
        text = str(c[0])
        axes = tuple((n, int(s)) for n, s in re.findall(r"'([^']*)'=(\d+)",
                                                        text.split("]", 1)[0]))
        over = tuple(re.findall(r"'([^']*)'", text.rsplit("{", 1)[1]))
        ids: tuple[int, ...] = ()
        m = re.search(r"device_ids=\((.*)\)\s*\{", text)
        if m:
            ids = _device_ids(m.group(1), tuple(s for _, s in axes))
        return MeshGroups(axes, ids, over)

    # structure
    def attr(self, c: list[Any]) -> tuple[str, Value]:
        return str(c[0]), c[1]

    def operand_name(self, c: list[Any]) -> str:
        return str(c[-1])[1:]

    @v_args(meta=True)
    def instruction(self, meta: Any, c: list[Any]) -> Instruction:
        root = isinstance(c[0], Token) and c[0].type == "ROOT"
        c = c[1:] if root else c
        name, typ, opcode = str(c[0])[1:], c[1], str(c[2])
        operands: list[str] = []
        literal: Value | None = None
        attrs: dict[str, Value] = {}
        for item in c[3:]:
            if isinstance(item, tuple):
                attrs[item[0]] = item[1]
            elif isinstance(item, str) and opcode not in ("constant", "parameter"):
                operands.append(item)
            else:
                literal = item
        return Instruction(name, typ, opcode, tuple(operands), attrs, literal, root,
                           span=self.span(meta))

    def param_decl(self, c: list[Any]) -> tuple[str, HloType]:
        return str(c[0]), c[1]

    def signature(self, c: list[Any]) -> tuple[tuple[str, HloType], ...]:
        return tuple(c[:-1])

    def computation(self, c: list[Any]) -> Computation:
        entry = isinstance(c[0], Token) and c[0].type == "ENTRY"
        c = c[1:] if entry else c
        return Computation(str(c[0])[1:], c[1], tuple(c[2:]), entry)

    def section(self, c: list[Token]) -> None:
        table = self.sections.setdefault(str(c[0]), {})
        for line in c[1:]:
            m = _SECTION.fullmatch(str(line).strip())
            if m:
                table[int(m.group(1))] = m.group(2)

    def module_header(self, c: list[Token]) -> None:
        return None

    def start(self, c: list[Any]) -> HloModule:
        comps = [x for x in c if isinstance(x, Computation)]
        sources = _source_lines(self.sections)
        out: dict[str, Computation] = {}
        for comp in comps:
            instrs = tuple(
                _with_source(i, sources) for i in comp.instructions
            )
            out[comp.name] = Computation(comp.name, comp.params, instrs, comp.entry)
        entry = next((x.name for x in comps if x.entry), comps[-1].name)
        return HloModule(out, entry)


def _device_ids(text: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``[2,2]T(1,0)``, ``[4]<=[2,2]T(1,0)`` or ``0,2,1,3`` as a flat device list."""
    m = re.fullmatch(r"\[([\d,]*)\](?:<=\[([\d,]*)\])?(?:T\(([\d,]*)\))?", text.strip())
    if m is None:
        return tuple(int(x) for x in text.split(",") if x.strip())
    dims = tuple(int(x) for x in m.group(1).split(",") if x)
    reshape = tuple(int(x) for x in (m.group(2) or m.group(1)).split(",") if x)
    perm = tuple(int(x) for x in (m.group(3) or "").split(",") if x)
    del dims  # the mesh shape gives the layout; the list is what matters
    return tuple(int(p) for p in _iota(reshape, perm).reshape(-1))


def _fields(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in _FIELD.findall(text)}


def _source_lines(sections: Mapping[str, Mapping[int, str]]) -> dict[int, SourceLine]:
    """stack_frame_id -> the user's file, line and function of that frame."""
    files = {k: v.strip().strip('"') for k, v in sections.get("FileNames", {}).items()}
    funcs = {k: v.strip().strip('"') for k, v in sections.get("FunctionNames", {}).items()}
    locs = {k: _fields(v) for k, v in sections.get("FileLocations", {}).items()}
    out: dict[int, SourceLine] = {}
    for frame, text in sections.get("StackFrames", {}).items():
        loc = locs.get(_fields(text).get("file_location_id", -1))
        if loc is not None and loc.get("file_name_id") in files:
            out[frame] = SourceLine(files[loc["file_name_id"]], loc.get("line", 0),
                                    funcs.get(loc.get("function_name_id", -1), ""))
    return out


def _with_source(instr: Instruction, sources: Mapping[int, SourceLine]) -> Instruction:
    meta = instr.attrs.get("metadata")
    if not isinstance(meta, Group):
        return instr
    for item in meta.items:
        if isinstance(item, Keyed) and item.key == "stack_frame_id" and isinstance(
            item.value, str
        ) and item.value.isdigit():
            line = sources.get(int(item.value))
            if line is not None:
                return Instruction(instr.name, instr.type, instr.opcode, instr.operands,
                                   instr.attrs, instr.literal, instr.root, line, instr.span)
    return instr


def parse_hlo(text: str, *, filename: str = "<hlo>") -> HloModule:
    """Parse a module's HLO text.

    Raises:
        FrontendError: the text is not HLO SOLAR reads (E0570, with its span).
    """
    source = Source(filename, text)
    if len(text) > MAX_HLO_BYTES:
        raise _error(f"the HLO text is larger than {MAX_HLO_BYTES >> 20} MiB")
    try:
        tree = hlo_parser().parse(text)
        module: HloModule = _ToModule(source).transform(tree)
    except UnexpectedInput as err:
        pos = getattr(err, "pos_in_stream", None) or 0
        token = getattr(err, "token", None)
        what = f"`{token}`" if token is not None else f"`{text[pos:pos + 1]}`"
        raise _error(f"unexpected {what} in the per-device HLO",
                     Span(source, pos, min(len(text), pos + 1))) from None
    except VisitError as err:
        if isinstance(err.orig_exc, FrontendError):
            raise err.orig_exc from None
        raise
    return module
