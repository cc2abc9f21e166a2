"""The HLO text parser (grammars/hlo.lark): structure, decoded attributes, the three
replica-group forms, source lines, and coded errors on text it cannot read."""

from __future__ import annotations

import pytest

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe.hlo_mesh import u32_is_index_math
from solar.frontends.jaxfe.hlo_parse import (
    ArrayType,
    Group,
    SliceRange,
    TupleType,
    ints,
    literal_values,
    parse_hlo,
    replica_groups,
    slice_bounds,
)

HEADER = """HloModule jit_f, entry_computation_layout={(f32[4,16]{1,0})->f32[4]{0}}, num_p=4

FileNames
1 "/home/u/model.py"

FunctionNames
1 "mlp"

FileLocations
1 {file_name_id=1 function_name_id=1 line=14 end_line=14 column=4 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

%add.clone (x.3: f32[], y.1: f32[]) -> f32[] {
  %x.3 = f32[] parameter(0)
  %y.1 = f32[] parameter(1)
  ROOT %add.1 = f32[] add(%x.3, %y.1)
}
"""


def module_with(*lines: str, params: str = "param: f32[4,16]") -> str:
    body = "\n".join(f"  {ln}" for ln in lines)
    return f"{HEADER}\nENTRY %main.0_spmd ({params}) -> f32[4,16] {{\n{body}\n}}\n"


def entry_instr(line: str) -> object:
    text = module_with("%param = f32[4,16]{1,0} parameter(0), sharding={devices=[2,1,2]<=[4] "
                       "last_tile_dim_replicate}, metadata={op_name=\"x\"}",
                       f"ROOT {line}")
    return parse_hlo(text).entry_computation.root


GROUPS = [
    ("{{0,1},{2,3}}", ((0, 1), (2, 3))),
    ("{{0,2},{1,3}}", ((0, 2), (1, 3))),
    ("[2,2]<=[4]", ((0, 1), (2, 3))),
    ("[2,2]<=[2,2]T(1,0)", ((0, 2), (1, 3))),
    ("[1,4]<=[4]", ((0, 1, 2, 3),)),
    ("mesh['axis_0'=2,'axis_1'=2] {'axis_1'}", ((0, 1), (2, 3))),
    ("mesh['axis_0'=2,'axis_1'=1,'axis_2'=2] {'axis_0'}", ((0, 2), (1, 3))),
    ("mesh['axis_0'=2,'axis_1'=2] {'axis_0','axis_1'}", ((0, 1, 2, 3),)),
    ("mesh['axis_0'=1,'axis_1'=2,'axis_2'=2], device_ids=([2,2]T(1,0)) {'axis_2'}",
     ((0, 2), (1, 3))),
    ("mesh['axis_0'=1,'axis_1'=2,'axis_2'=2], device_ids=([2,2]T(1,0)) {'axis_1'}",
     ((0, 1), (2, 3))),
    ("{}", ((0, 1, 2, 3),)),
]


@pytest.mark.parametrize(("text", "want"), GROUPS)
def test_replica_group_forms(text: str, want: tuple[tuple[int, ...], ...]) -> None:
    instr = entry_instr(
        f"%all-reduce = f32[4,16]{{1,0}} all-reduce(%param), channel_id=1, "
        f"replica_groups={text}, use_global_device_ids=true, to_apply=%add.clone, "
        f"metadata={{op_name=\"jit(f)/dot_general\" stack_frame_id=1}}"
    )
    assert instr.opcode == "all-reduce"  # type: ignore[attr-defined]
    assert replica_groups(instr.attrs.get("replica_groups"), 4) == want  # type: ignore[attr-defined]


def test_instruction_structure_and_source_line() -> None:
    instr = entry_instr(
        "%dot = f32[4,16]{1,0} dot(%param, %param), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={1}, lhs_batch_dims={}, metadata={op_name=\"jit(f)/dot\" "
        "stack_frame_id=1}"
    )
    assert instr.name == "dot" and instr.opcode == "dot"  # type: ignore[attr-defined]
    assert instr.type == ArrayType("f32", (4, 16))  # type: ignore[attr-defined]
    assert instr.operands == ("param", "param")  # type: ignore[attr-defined]
    assert ints(instr.attrs["lhs_contracting_dims"]) == (1,)  # type: ignore[attr-defined]
    assert ints(instr.attrs["lhs_batch_dims"]) == ()  # type: ignore[attr-defined]
    src = instr.source  # type: ignore[attr-defined]
    assert (src.file, src.line, src.function) == ("/home/u/model.py", 14, "mlp")
    assert instr.span is not None and instr.span.line == 23  # type: ignore[attr-defined]


ATTRS = [
    ("slice={[0:4], [2:16:2]}", lambda v: slice_bounds(v) == (SliceRange(0, 4, 1),
                                                             SliceRange(2, 16, 2))),
    ("padding=0_0x1_2_1", lambda v: v == "0_0x1_2_1"),
    ("dim_labels=b01f_01io->b01f", lambda v: v == "b01f_01io->b01f"),
    ("direction=GT, type=TOTALORDER", lambda v: v == "GT"),
    ("dimensions={1,0}", lambda v: ints(v) == (1, 0)),
    ("source_target_pairs={{0,1},{1,0}}",
     lambda v: [ints(g) for g in v.items] == [(0, 1), (1, 0)]),
    ("backend_config={\"known_trip_count\":{\"n\":\"3\"}}", lambda v: isinstance(v, Group)),
    ("frontend_attributes={_xla_stream=\"0\"}", lambda v: isinstance(v, Group)),
    ("sharding={{replicated}, {devices=[2,2]0,1,2,3}}", lambda v: len(v.items) == 2),
]


@pytest.mark.parametrize(("attr", "check"), ATTRS)
def test_attribute_values(attr: str, check: object) -> None:
    instr = entry_instr(f"%x = f32[4,16]{{1,0}} copy(%param), {attr}")
    key = attr.split("=", 1)[0]
    assert check(instr.attrs[key])  # type: ignore[attr-defined, operator]


LITERALS = [
    ("f32[] constant(0)", 0),
    ("f32[] constant(-inf)", float("-inf")),
    ("f32[] constant(1e-05)", 1e-05),
    ("pred[] constant(true)", True),
    ("s32[2]{0} constant({0, 4})", [0, 4]),
    ("f32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })", [[1, 2], [3, 4]]),
]


@pytest.mark.parametrize(("text", "want"), LITERALS)
def test_constant_literals(text: str, want: object) -> None:
    instr = entry_instr(f"%c = {text}")
    assert literal_values(instr.literal) == want  # type: ignore[attr-defined]


def test_tuples_comments_and_computations() -> None:
    text = module_with(
        "%param = f32[4,16]{1,0} parameter(0)",
        "%t = (f32[4,16]{1,0}, (s32[], f32[])) tuple(%param, /*index=1*/%param)",
        "ROOT %g = f32[4,16]{1,0} get-tuple-element(%t), index=0",
    )
    module = parse_hlo(text)
    assert set(module.computations) == {"add.clone", "main.0_spmd"}
    assert module.entry == "main.0_spmd"
    entry = module.entry_computation
    assert entry.params == (("param", ArrayType("f32", (4, 16))),)
    t = entry.instructions[1]
    assert t.type == TupleType((ArrayType("f32", (4, 16)),
                                TupleType((ArrayType("s32", ()), ArrayType("f32", ())))))
    assert t.operands == ("param", "param")
    assert entry.root.name == "g"


HOSTILE = [
    ("", "unexpected"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[] bogus((\n}\n", "unexpected"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[<=4] parameter(0)\n}\n",
     "dynamic shape"),
    ("not hlo at all \x00", "unexpected"),
]


@pytest.mark.parametrize(("text", "message"), HOSTILE)
def test_text_that_is_not_hlo_is_e0570(text: str, message: str) -> None:
    with pytest.raises(FrontendError) as err:
        parse_hlo(text)
    assert err.value.code == "E0570"
    assert message in err.value.message


def test_a_parse_error_points_at_its_line() -> None:
    text = module_with("%param = f32[4,16]{1,0} parameter(0)",
                       "ROOT %x = f32[4,16] add(%param, %param))")
    with pytest.raises(FrontendError) as err:
        parse_hlo(text)
    assert err.value.code == "E0570" and err.value.span is not None
    assert (err.value.span.line, err.value.span.col) == (23, 42)  # the second `)`


def test_unknown_replica_group_form_is_e0570() -> None:
    instr = entry_instr("%x = f32[4,16]{1,0} all-reduce(%param), replica_groups={0,1}")
    with pytest.raises(FrontendError) as err:
        replica_groups(instr.attrs["replica_groups"], 4)  # type: ignore[attr-defined]
    assert err.value.code == "E0570"


U32 = [
    # the partitioner's offset table: partition-id indexes a u32 constant
    (["%t = u32[4]{0} constant({0, 0, 1, 1})", "%p = u32[] partition-id()",
      "%d = u32[1]{0} dynamic-slice(%t, %p), dynamic_slice_sizes={1}",
      "%r = u32[] reshape(%d)", "%c = s32[] convert(%r)"], True),
    # bit manipulation of u32 values is not index arithmetic
    (["%p = u32[] partition-id()", "%k = u32[] constant(3)",
      "%s = u32[] shift-right-logical(%p, %k)"], False),
    # a constant at or above 2^31 would change value in s32
    (["%t = u32[2]{0} constant({0, 4294967295})"], False),
    # a float converted to u32 (negative values saturate differently)
    (["%f = f32[] constant(-1)", "%u = u32[] convert(%f)"], False),
]


@pytest.mark.parametrize(("lines", "narrow"), U32)
def test_u32_index_math(lines: list[str], narrow: bool) -> None:
    text = module_with("%param = f32[4,16]{1,0} parameter(0)", *lines,
                       "ROOT %out = f32[4,16]{1,0} copy(%param)")
    assert u32_is_index_math(parse_hlo(text)) is narrow
