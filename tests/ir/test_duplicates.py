"""Duplicate kernels (solar.ir.merge_duplicate_kernels, Note [Duplicate kernels]).

A kernel that recomputes an earlier kernel's values exactly is read through and dropped,
so the work is charged once; anything short of an exact match is left alone.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from solar.bounds import evaluate_costs
from solar.diagnostics import ExecutionError
from solar.einsum import lift_to_einsum
from solar.ir import (
    Access,
    Assign,
    Binary,
    Expr,
    FloatLit,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    Stmt,
    TensorDecl,
    eliminate_dead_code,
    eval_int,
    map_expr,
    merge_duplicate_kernels,
    parse_program,
    verify_program,
    walk_stmts,
)
from solar.validate import execute_program

from .strategies import valid_programs

HEADER = """solar-ir 1
program p
input X : f32[8, 4]
input W : f32[4]
temp A : f32[8, 4]
temp B : f32[8, 4]
temp C : f32[8, 4]
temp D : f32[8, 4]
temp S : f32[8]
temp R : f32[8]
output Y : f32[8, 4]
"""
SQ_A = "kernel sqa { for i in 0 .. 8 { for j in 0 .. 4 { A[i, j] = X[i, j] * X[i, j] } } }\n"
SQ_B = "kernel sqb { for a in 0 .. 8 { for b in 0 .. 4 { B[a, b] = X[a, b] * X[a, b] } } }\n"
ADD = "kernel add { for i in 0 .. 8 { for j in 0 .. 4 { Y[i, j] = A[i, j] + B[i, j] } } }\n"
# a mean of squares with a kernel-local accumulator, and the same under other names
MS = """kernel {name} {{
  local {acc} : f32[8]
  for {i} in 0 .. 8 {{
    {acc}[{i}] = 0.0
    for {k} in 0 .. 4 {{ {acc}[{i}] += X[{i}, {k}] * X[{i}, {k}] }}
    {out}[{i}] = {acc}[{i}] / 4.0
  }}
}}
"""
NORM = (
    "kernel {name} {{ for i in 0 .. 8 {{ for j in 0 .. 4 {{ {out}[i, j] = X[i, j] / {s}[i] }} }} }}"
)
NORM += "\n"
MS_S = MS.format(name="ms1", acc="t", i="i", k="k", out="S")
MS_R = MS.format(name="ms2", acc="u", i="r", k="c", out="R")
ROW_SUM = "kernel use {{ for i in 0 .. 8 {{ for j in 0 .. 4 {{ Y[i, j] = {a}[i] + {b}[i] }} }} }}\n"

# name: (IR text, keep, kernels dropped, FLOPs before, FLOPs after)
CASES: dict[str, tuple[str, tuple[str, ...], int, int, int]] = {
    # B = X * X again under other loop names: 32 multiplies charged once
    "square_twice": (HEADER + SQ_A + SQ_B + ADD, (), 1, 3 * 32, 2 * 32),
    # a whole reduction kernel with a local accumulator: 8 * (4 * 2 + 1) FLOPs once
    "mean_of_squares": (
        HEADER + MS_S + MS_R + ROW_SUM.format(a="S", b="R"),
        (),
        1,
        # the row sum S[i] + R[i] is the same at every j: once per row (Note [Repeated work])
        2 * 72 + 8,
        72 + 8,
    ),
    # C = A + 1 and D = B + 1 match once B is read as A: both pairs merge
    "chain": (
        HEADER
        + SQ_A
        + SQ_B
        + "kernel ca { for i in 0 .. 8 { for j in 0 .. 4 { C[i, j] = A[i, j] + 1.0 } } }\n"
        + "kernel db { for i in 0 .. 8 { for j in 0 .. 4 { D[i, j] = B[i, j] + 1.0 } } }\n"
        + "kernel add { for i in 0 .. 8 { for j in 0 .. 4 { Y[i, j] = C[i, j] * D[i, j] } } }\n",
        (),
        2,
        5 * 32,
        3 * 32,
    ),
    # the same values by another loop order: not structurally identical, left alone
    "other_loop_order": (
        HEADER + SQ_A + "kernel sqb { for b in 0 .. 4 { for a in 0 .. 8 { "
        "B[a, b] = X[a, b] * X[a, b] } } }\n" + ADD,
        (),
        0,
        96,
        96,
    ),
    # a transposed read is other values
    "other_values": (
        HEADER.replace("f32[8, 4]", "f32[8, 8]").replace("f32[4]", "f32[8]")
        + SQ_A.replace("4", "8")
        + SQ_B.replace("4", "8").replace("X[a, b] * X[a, b]", "X[b, a] * X[b, a]")
        + ADD.replace("4", "8"),
        (),
        0,
        3 * 64,
        3 * 64,
    ),
    # another constant
    "other_constant": (
        HEADER
        + SQ_A.replace("X[i, j] * X[i, j]", "X[i, j] * 2.0")
        + SQ_B.replace("X[a, b] * X[a, b]", "X[a, b] * 3.0")
        + ADD,
        (),
        0,
        96,
        96,
    ),
    # the later result is kept for an op outside the IR
    "kept": (HEADER + SQ_A + SQ_B + ADD, ("B",), 0, 96, 96),
    # the later result is an output: it stays
    "output_target": (HEADER.replace("temp B", "output B") + SQ_A + SQ_B + ADD, (), 0, 96, 96),
    # S is written again between the two normalisations, which read it
    "written_between": (
        HEADER
        + MS_S
        + NORM.format(name="n1", out="A", s="S")
        + "kernel again { for i in 0 .. 8 { S[i] = W[0] } }\n"
        + NORM.format(name="n2", out="B", s="S")
        + ADD,
        (),
        0,
        72 + 3 * 32,
        72 + 3 * 32,
    ),
    # not written in between: the second normalisation is the first
    "read_after_its_writer": (
        HEADER
        + MS_S
        + NORM.format(name="n1", out="A", s="S")
        + NORM.format(name="n2", out="B", s="S")
        + ADD,
        (),
        1,
        72 + 3 * 32,
        72 + 2 * 32,
    ),
    # the earlier result is written again later: its readers would see other values
    "first_rewritten": (
        HEADER + SQ_A + SQ_B + "kernel twice { for i in 0 .. 8 { A[i, 0] = W[0] } }\n" + ADD,
        (),
        0,
        96,
        96,
    ),
}


def _flops(program: Program) -> float:
    return float(evaluate_costs(lift_to_einsum(program)).group_flops.sum())


def _bytes(program: Program) -> tuple[float, float]:
    c = evaluate_costs(lift_to_einsum(program))
    return (
        float(c.read_bytes.sum() + c.written_bytes.sum()),
        float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()),
    )


def _inputs(p: Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = {s.name: eval_int(s.value, {}) for s in p.sizes}
    return {
        t.name: rng.standard_normal([eval_int(s, sizes) for s in t.shape]).astype(np.float32)
        for t in p.tensors
        if t.role in ("input", "param")
    }


def _assert_same_outputs(p: Program, q: Program) -> None:
    inputs = _inputs(p)
    want, got = execute_program(p, inputs), execute_program(q, inputs)
    assert want.keys() == got.keys()
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)  # NaNs compare equal


@pytest.mark.parametrize("case", list(CASES))
def test_duplicates_are_charged_once(case: str) -> None:
    text, keep, dropped, before, after = CASES[case]
    p = parse_program(text)
    verify_program(p)
    q = eliminate_dead_code(merge_duplicate_kernels(p, keep=keep), keep=keep)
    verify_program(q)
    assert len(p.kernels) - len(q.kernels) == dropped
    if not dropped:
        assert merge_duplicate_kernels(p, keep=keep) is p
    assert (_flops(p), _flops(q)) == (before, after)
    unfused, fused = _bytes(q)
    unfused_before, fused_before = _bytes(p)
    assert unfused <= unfused_before and fused <= fused_before
    _assert_same_outputs(p, q)


def test_the_square_twice_bytes_hand_arithmetic() -> None:
    # kernels sqa, sqb, add over 8 x 4 f32 (128 bytes a tensor). Unfused: each square
    # reads X and writes its result (256 each), add reads two and writes Y (384): 896.
    # Merged: sqa (256) and add reading A twice (A once, Y written: 256 as A is one
    # tensor): 512. Fused: X read and Y written, 256, either way.
    p = parse_program(HEADER + SQ_A + SQ_B + ADD)
    q = eliminate_dead_code(merge_duplicate_kernels(p))
    assert _bytes(p) == (896, 256)
    assert _bytes(q) == (512, 256)


def test_a_random_draw_is_no_duplicate_of_another() -> None:
    # two dropout masks are copies of two distinct drawn inputs: not the same values
    text = (
        HEADER.replace("input W : f32[4]", "input G1 : f32[8, 4]\ninput G2 : f32[8, 4]")
        + "kernel d1 { for i in 0 .. 8 { for j in 0 .. 4 { A[i, j] = G1[i, j] } } }\n"
        + "kernel d2 { for i in 0 .. 8 { for j in 0 .. 4 { B[i, j] = G2[i, j] } } }\n"
        + ADD
    )
    p = parse_program(text)
    assert merge_duplicate_kernels(p) is p


def test_an_alias_kernel_read_keeps_the_duplicate() -> None:
    text = (
        HEADER
        + "output V : f32[8, 4]\n"
        + SQ_A
        + SQ_B
        + ADD
        + "alias kernel v { for i in 0 .. 8 { for j in 0 .. 4 { V[i, j] = B[i, j] } } }\n"
    )
    p = parse_program(text)
    verify_program(p)
    assert merge_duplicate_kernels(p) is p


# ---------------------------------------------------------------------------- property
def _target_of(kernel: Kernel) -> str:
    return next(s.target.tensor for s, _ in walk_stmts(kernel.body) if isinstance(s, Assign))


def _renamed(kernel: Kernel, target: str, name: str) -> Kernel:
    """``kernel`` writing ``target`` instead of its own tensor, loops renamed ``v -> v_``."""
    loops = {s.var for s, _ in walk_stmts(kernel.body) if isinstance(s, For)}

    def expr(e: Expr) -> Expr:
        def go(x: Expr) -> Expr | None:
            if isinstance(x, Name) and x.name in loops:
                return Name(x.name + "_")
            return None

        return map_expr(e, go)

    def stmt(s: Stmt) -> Stmt:
        match s:
            case Assign() | Reduce():
                t = expr(s.target)
                assert isinstance(t, Access)
                return dataclasses.replace(
                    s, target=dataclasses.replace(t, tensor=target), value=expr(s.value)
                )
            case For():
                return dataclasses.replace(
                    s, var=s.var + "_", hi=expr(s.hi), body=tuple(map(stmt, s.body))
                )
            case If():
                return dataclasses.replace(s, cond=expr(s.cond), body=tuple(map(stmt, s.body)))
        raise AssertionError(s)

    return Kernel(name, (), tuple(stmt(s) for s in kernel.body))


def _reader(source: TensorDecl, target: str) -> Kernel:
    """``target[i...] = source[i...] * 2.0`` over ``source``'s shape."""
    variables = [f"z{d}" for d in range(len(source.shape))]
    body: tuple[Stmt, ...] = (
        Assign(
            Access(target, tuple(map(Name, variables))),
            Binary("*", Access(source.name, tuple(map(Name, variables))), FloatLit(2.0)),
        ),
    )
    for var, dim in reversed(list(zip(variables, source.shape, strict=True))):
        body = (For(var, IntLit(0), dim, body),)
    return Kernel("reader", (), body)


@settings(max_examples=40, deadline=None)
@given(valid_programs(), st.data())
def test_a_repeated_kernel_is_charged_as_if_written_once(
    program: Program, data: st.DataObject
) -> None:
    # Build two programs: `once` reads a kernel's result Y in a new kernel; `twice` has a
    # copy of that kernel (loops renamed) writing a new temp D, inserted anywhere after
    # it, and reads D instead. Merged and pruned, `twice` is `once`, exactly; both run
    # to the same outputs, bit for bit.
    computing = [k for k in range(len(program.kernels)) if not program.kernels[k].alias]
    index = data.draw(st.sampled_from(computing))
    kernel = program.kernels[index]
    # the reader reads every element: the kernel must write them all
    assume(all(s.step == 1 for s, _ in walk_stmts(kernel.body) if isinstance(s, For)))
    y = program.tensor(_target_of(kernel))
    d = dataclasses.replace(y, name="D", role="temp")
    z = dataclasses.replace(y, name="Z", role="output")
    # alias kernels come last: the copy and the reader go before them
    computed, aliases = program.kernels[: len(computing)], program.kernels[len(computing) :]
    at = data.draw(st.integers(index + 1, len(computed)))
    once = dataclasses.replace(
        program, tensors=(*program.tensors, z), kernels=(*computed, _reader(y, "Z"), *aliases)
    )
    dup = _renamed(kernel, "D", "dup")
    twice = dataclasses.replace(
        program,
        tensors=(*program.tensors, d, z),
        kernels=(*computed[:at], dup, *computed[at:], _reader(d, "Z"), *aliases),
    )
    verify_program(twice)
    merged = merge_duplicate_kernels(twice)
    assert eliminate_dead_code(merged) == eliminate_dead_code(once)
    try:  # a drawn program may leave an output element unwritten (loops with step 2)
        execute_program(once, _inputs(once))
    except ExecutionError:
        assume(False)
    _assert_same_outputs(twice, merged)
    _assert_same_outputs(once, merged)
