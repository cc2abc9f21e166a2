"""Distributed programs: world and group declarations, collective kernels, their checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.diagnostics import IRSyntaxError
from solar.ir import (
    COLLECTIVE_KINDS,
    COLLECTIVE_OPS,
    Collective,
    GroupDecl,
    IntLit,
    Kernel,
    Program,
    SizeDecl,
    collect_errors,
    collective_shape_problem,
    collectives,
    group_partition,
    parse_program,
    print_program,
    verify_program,
)

from .strategies import exprs

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples" / "dist").glob("*.alir"))

HEAD = """solar-ir 1
program p
world W = 4
size N = 8
group tp = rank // 2
group dp = rank % 2
"""
TENSORS = """input X : f32[N]
input I : i32[N]
temp P : f32[N]
"""


def _program(decls: str, body: str) -> str:
    lines = decls.splitlines()
    groups = "".join(f"{line}\n" for line in lines if line.startswith("group"))
    tensors = "".join(f"{line}\n" for line in lines if not line.startswith("group"))
    return HEAD + groups + TENSORS + tensors + body


def test_samples_exist() -> None:
    assert len(SAMPLES) >= 2


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_roundtrips_and_verifies(path: Path) -> None:
    text = path.read_text()
    program = parse_program(text, filename=str(path))
    assert print_program(program) == text
    verify_program(program)
    assert collectives(program)


ACCEPTED = [
    ("all_reduce", "output Y : f32[N]", "kernel c {\n  Y = all_reduce(X, op=sum, group=tp)\n}"),
    ("all_reduce_avg", "output Y : f32[N]", "kernel c {\n  Y = all_reduce(X, op=avg)\n}"),
    ("gather_concat", "output Y : f32[2 * N]",
     "kernel c {\n  Y = all_gather(X, dim=0, group=tp)\n}"),
    ("gather_stack", "output Y : f32[N, 4]", "kernel c {\n  Y = all_gather(X, dim=1)\n}"),
    ("scatter", "output Y : f32[N // 2]",
     "kernel c {\n  Y = reduce_scatter(X, op=max, dim=0, group=dp)\n}"),
    ("a2a", "output Y : f32[N]", "kernel c {\n  Y = all_to_all(X, split=0, concat=0)\n}"),
    ("bcast", "output Y : i32[N]", "kernel c {\n  Y = broadcast(I, root=1, group=tp)\n}"),
    ("ring", "output Y : f32[N]", "kernel c {\n  Y = permute(X, to=(rank + 1) % W)\n}"),
    ("pipe", "output Y : f32[N]", "kernel c {\n  Y = permute(X, to=rank + 1)\n}"),
    ("rank_subscript", "output Y : f32[N]",
     "kernel k {\n  for i in 0 .. 2 {\n    Y[i + 2 * rank] = X[i + 2 * rank]\n  }\n}"),
]


@pytest.mark.parametrize(("name", "decls", "body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_accepted(name: str, decls: str, body: str) -> None:
    program = parse_program(_program(decls, body))
    assert collect_errors(program) == []
    assert print_program(parse_program(print_program(program))) == print_program(program)


SYNTAX = [
    ("unknown_kind", "Y = all_sum(X, op=sum)"),
    ("unknown_arg", "Y = all_reduce(X, op=sum, axis=0)"),
    ("twice", "Y = all_reduce(X, op=sum, op=max)"),
    ("bad_op", "Y = all_reduce(X, op=mean)"),
    ("dim_not_literal", "Y = all_gather(X, dim=N)"),
    ("group_not_name", "Y = all_reduce(X, op=sum, group=1)"),
]


@pytest.mark.parametrize(("name", "stmt"), SYNTAX, ids=[c[0] for c in SYNTAX])
def test_malformed_collective_is_e0150(name: str, stmt: str) -> None:
    with pytest.raises(IRSyntaxError) as err:
        parse_program(_program("output Y : f32[N]", f"kernel c {{\n  {stmt}\n}}"))
    assert err.value.code == "E0150"
    assert err.value.span is not None


REJECTED = [
    # (id, code, declarations, kernels)
    ("no_world", "E0250", None, "kernel c {\n  Y = all_reduce(X, op=sum)\n}"),
    ("unequal_groups", "E0251", "group bad = rank // 3\noutput Y : f32[N]",
     "kernel c {\n  Y = all_reduce(X, op=sum, group=bad)\n}"),
    ("group_key_reads_tensor", "E0250", "group bad = X[0]\noutput Y : f32[N]",
     "kernel c {\n  Y = all_reduce(X, op=sum, group=bad)\n}"),
    ("gather_shape", "E0252", "output Y : f32[N]", "kernel c {\n  Y = all_gather(X, dim=0)\n}"),
    ("scatter_indivisible", "E0252", "output Y : f32[1]",
     "kernel c {\n  Y = reduce_scatter(P, op=sum, dim=0, group=tp)\n}"),
    ("dtype", "E0252", "output Y : i32[N]", "kernel c {\n  Y = all_reduce(X, op=sum)\n}"),
    ("missing_op", "E0253", "output Y : f32[N]", "kernel c {\n  Y = all_reduce(X)\n}"),
    ("extra_dim", "E0253", "output Y : f32[N]",
     "kernel c {\n  Y = all_reduce(X, op=sum, dim=0)\n}"),
    ("unknown_group", "E0253", "output Y : f32[N]",
     "kernel c {\n  Y = all_reduce(X, op=sum, group=ep)\n}"),
    ("avg_int", "E0253", "output Y : i32[N]", "kernel c {\n  Y = all_reduce(I, op=avg)\n}"),
    ("root_outside", "E0253", "output Y : f32[N]",
     "kernel c {\n  Y = broadcast(X, root=2, group=tp)\n}"),
    ("permute_group", "E0253", "output Y : f32[N]",
     "kernel c {\n  Y = permute(X, to=rank, group=tp)\n}"),
    ("permute_two_to_one", "E0254", "output Y : f32[N]",
     "kernel c {\n  Y = permute(X, to=rank // 2)\n}"),
    ("writes_input", "E0214", "output Y : f32[N]",
     "kernel c {\n  X = all_reduce(P, op=sum)\n}\nkernel k {\n  Y[0] = 0.0\n}"),
    ("unknown_tensor", "E0203", "output Y : f32[N]",
     "kernel c {\n  Y = all_reduce(Z, op=sum)\n}"),
    ("group_twice", "E0202", "group tp = rank\noutput Y : f32[N]",
     "kernel c {\n  Y = all_reduce(X, op=sum)\n}"),
    ("rank_out_of_bounds", "E0216", "output Y : f32[N]",
     "kernel k {\n  for i in 0 .. 2 {\n    Y[i + 3 * rank] = X[i]\n  }\n}"),
]


@pytest.mark.parametrize(
    ("name", "code", "decls", "body"), REJECTED, ids=[c[0] for c in REJECTED]
)
def test_rejected(name: str, code: str, decls: str | None, body: str) -> None:
    if decls is None:
        text = "solar-ir 1\nprogram p\nsize N = 8\ninput X : f32[N]\noutput Y : f32[N]\n" + body
    else:
        text = _program(decls, body)
    errors = collect_errors(parse_program(text))
    assert code in [e.code for e in errors], [(e.code, e.message) for e in errors]


def test_world_must_be_a_literal_first_size() -> None:
    program = Program(
        "p", (SizeDecl("N", IntLit(4)), SizeDecl("W", IntLit(2))), (), (), world="W"
    )
    assert [e.code for e in collect_errors(program)] == ["E0250"]


def test_rank_is_unknown_outside_distributed_programs() -> None:
    text = "solar-ir 1\nprogram p\nsize N = 8\noutput Y : f32[N]\nkernel k {\n  Y[rank] = 0.0\n}"
    assert "E0204" in [e.code for e in collect_errors(parse_program(text))]


@pytest.mark.parametrize(
    ("coll", "source", "target", "n", "ok"),
    [
        (Collective("all_gather", "Y", "X", dim=1), (2, 3), (2, 12), 4, True),
        (Collective("all_gather", "Y", "X", dim=2), (2, 3), (2, 3, 4), 4, True),
        (Collective("reduce_scatter", "Y", "X", op="sum", dim=0), (4, 3), (3,), 4, True),
        (Collective("reduce_scatter", "Y", "X", op="sum", dim=0), (8, 3), (2, 3), 4, True),
        (Collective("all_to_all", "Y", "X", split=0, concat=1), (8, 3), (2, 12), 4, True),
        (Collective("all_to_all", "Y", "X", split=0, concat=1), (6, 3), (2, 12), 4, False),
        (Collective("broadcast", "Y", "X", root=0), (5,), (5,), 4, True),
        (Collective("all_reduce", "Y", "X", op="sum"), (5,), (4,), 4, False),
    ],
)
def test_shape_rules(
    coll: Collective, source: tuple[int, ...], target: tuple[int, ...], n: int, ok: bool
) -> None:
    assert (collective_shape_problem(coll, source, target, n) is None) is ok


def test_collectives_lists_groups_and_bytes() -> None:
    text = _program(
        "output Y : f32[N // 2]\noutput Z : f32[2 * N]\noutput R : f32[N]",
        "kernel rs {\n  Y = reduce_scatter(X, op=sum, dim=0, group=dp)\n}\n"
        "kernel ag {\n  Z = all_gather(X, dim=0, group=tp)\n}\n"
        "kernel ring {\n  R = permute(X, to=(rank + 1) % W)\n}",
    )
    program = parse_program(text)
    verify_program(program)
    rs, ag, ring = collectives(program)
    assert (rs.kind, rs.op, rs.groups, rs.group_size) == ("reduce_scatter", "sum",
                                                          ((0, 2), (1, 3)), 2)
    assert (rs.source_bytes, rs.target_bytes, rs.buffer_bytes) == (32, 16, 32)
    assert (ag.groups, ag.buffer_bytes) == (((0, 1), (2, 3)), 64)
    assert ring.pairs == ((0, 1), (1, 2), (2, 3), (3, 0))
    wide = collectives(program, {"W": 8, "N": 16})
    assert wide[0].groups == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert wide[1].buffer_bytes == 128


def test_single_device_program_has_no_collectives() -> None:
    text = "solar-ir 1\nprogram p\nsize N = 8\noutput Y : f32[N]\nkernel k {\n  Y[0] = 0.0\n}"
    assert collectives(parse_program(text)) == ()


def test_group_partition_world() -> None:
    program = parse_program(HEAD)
    assert group_partition(program, None, {"W": 3}) == ((0, 1, 2),)
    assert group_partition(program, "tp", {"W": 4, "N": 8}) == ((0, 1), (2, 3))


_names = st.sampled_from(("X", "Y", "acc", "T0"))
_ints = st.none() | st.integers(min_value=0, max_value=5)
_collective = st.builds(
    Collective,
    st.sampled_from(COLLECTIVE_KINDS),
    _names,
    _names,
    op=st.none() | st.sampled_from(COLLECTIVE_OPS),
    dim=_ints,
    split=_ints,
    concat=_ints,
    root=_ints,
    to=st.none() | exprs(5),
    group=st.none() | st.sampled_from(("tp", "dp")),
)
distributed_programs = st.builds(
    Program,
    st.just("p"),
    st.tuples(st.builds(SizeDecl, st.just("W"), st.integers(1, 64).map(IntLit))),
    st.just(()),
    st.lists(st.builds(Kernel, st.sampled_from(("c0", "c1")), st.just(()), st.just(()),
                       collective=_collective), max_size=3).map(tuple),
    world=st.just("W"),
    groups=st.lists(st.builds(GroupDecl, st.sampled_from(("tp", "dp")), exprs(5)),
                    max_size=2).map(tuple),
)


@given(distributed_programs)
def test_random_distributed_program_roundtrips(program: Program) -> None:
    text = print_program(program)
    again = parse_program(text)
    assert again == program
    assert print_program(again) == text


def test_group_key_may_use_sizes() -> None:
    program = parse_program(_program("group blocks = rank // (W // 2)\noutput Y : f32[N]",
                                     "kernel c {\n  Y = all_reduce(X, op=sum, group=blocks)\n}"))
    verify_program(program)
    assert collectives(program)[0].groups == ((0, 1), (2, 3))
