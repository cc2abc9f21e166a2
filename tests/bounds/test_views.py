"""Views and aliased outputs are free (issue 14, bug 1; Note [Alias kernels] in docs/bounds.md).

Each case is the IR the PyTorch frontend emits for a one-line program on an 8192 x 8192
fp32 input (``E = 8192**2`` elements, ``4E = 268,435,456`` bytes per tensor): an output
that eager returns as a view or alias is written by an ``alias kernel``. Hand arithmetic,
cold cache, pinned H100 (``B = 3.35e12`` B/s): every bound is ``bytes / B`` (the FLOPs,
at most ``E`` at 67 TFLOP/s, take 1 µs against at least 160 µs of memory).

| program | bytes every model charges | before the fix (fused, unfused) |
|---|---|---|
| ``return x.t()`` / ``x`` / ``x.reshape(-1)`` | 0 | 2 * 4E, 2 * 4E |
| ``return x[:, :N/2]`` | 0 | 4E, 4E |
| ``y = x + 1; return y, y`` | 2 * 4E: read x, write y once | 3 * 4E, 4 * 4E |
| ``return x, x + 1`` | 2 * 4E | 3 * 4E, 4 * 4E |
| ``(x * 2).chunk(2, 1)`` | 2 * 4E: read x, write the product once | 2 * 4E, 4 * 4E |
| ``(a + b).t()`` | 3 * 4E: read a, b, write the sum once | 3 * 4E, 5 * 4E |

Properties (all bundled specs, warm and cold): an input returned through a random
chain of permutes, slices, reshapes and broadcasts costs nothing; duplicating an output
(or returning an input as one more output) never increases any bound.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sample_sizes import small_ir_text

from solar.bounds import BOUND_MODELS, compute_bound_set, evaluate_costs
from solar.einsum import EinsumGraph, lift_to_einsum
from solar.hw import HardwareSpec, list_hardware_specs
from solar.ir import (
    Access,
    Assign,
    Binary,
    DType,
    Expr,
    For,
    IntLit,
    Kernel,
    Name,
    Program,
    Stmt,
    TensorDecl,
    parse_program,
    verify_program,
)

from .conftest import h100

N = 8192
E = N * N
F32 = 4
B = 3.35e12  # pinned H100 SXM DRAM bandwidth (conftest.H100_FIGURES)
ROOT = Path(__file__).resolve().parents[2]


def _loops(*extents: int) -> tuple[str, str]:
    """``for iK in 0 .. n {`` lines and their closing braces, innermost last."""
    heads = "".join(f"for i{k} in 0 .. {n} {{ " for k, n in enumerate(extents))
    return heads, "}" * len(extents)


def _alias(name: str, target: str, source: str, *extents: int) -> str:
    head, tail = _loops(*extents)
    return f"alias kernel {name} {{ {head}{target} = {source} {tail} }}\n"


def _kernel(name: str, stmt: str, *extents: int) -> str:
    head, tail = _loops(*extents)
    return f"kernel {name} {{ {head}{stmt} {tail} }}\n"


def _program(decls: str, *kernels: str) -> Program:
    program = parse_program("solar-ir 1\nprogram p\n" + decls + "".join(kernels))
    verify_program(program)
    return program


X = f"input x0 : f32[{N}, {N}]\n"
CASES: dict[str, tuple[Program, int]] = {
    "transpose": (
        _program(
            X + f"output y0 : f32[{N}, {N}]\n", _alias("y0_copy", "y0[i0, i1]", "x0[i1, i0]", N, N)
        ),
        0,
    ),
    "identity": (
        _program(
            X + f"output y0 : f32[{N}, {N}]\n", _alias("y0_copy", "y0[i0, i1]", "x0[i0, i1]", N, N)
        ),
        0,
    ),
    "reshape": (
        _program(
            X + f"output y0 : f32[{E}]\n",
            _alias("y0_copy", "y0[i0]", f"x0[i0 // {N}, i0 % {N}]", E),
        ),
        0,
    ),
    "slice": (
        _program(
            X + f"output y0 : f32[{N}, {N // 2}]\n",
            _alias("y0_copy", "y0[i0, i1]", "x0[i0, i1]", N, N // 2),
        ),
        0,
    ),
    "same_output_twice": (  # y = x + 1; return y, y
        _program(
            X + f"output y0 : f32[{N}, {N}]\noutput y1 : f32[{N}, {N}]\n",
            _kernel("add", "y0[i0, i1] = x0[i0, i1] + 1.0", N, N),
            _alias("y1_copy", "y1[i0, i1]", "y0[i0, i1]", N, N),
        ),
        2 * F32 * E,
    ),
    "input_and_result": (  # return x, x + 1
        _program(
            X + f"output y0 : f32[{N}, {N}]\noutput y1 : f32[{N}, {N}]\n",
            _kernel("add", "y1[i0, i1] = x0[i0, i1] + 1.0", N, N),
            _alias("y0_copy", "y0[i0, i1]", "x0[i0, i1]", N, N),
        ),
        2 * F32 * E,
    ),
    "chunk": (  # (x * 2).chunk(2, 1): two disjoint halves of one temp
        _program(
            X + f"temp t0 : f32[{N}, {N}]\n"
            f"output y0 : f32[{N}, {N // 2}]\noutput y1 : f32[{N}, {N // 2}]\n",
            _kernel("mul", "t0[i0, i1] = x0[i0, i1] * 2.0", N, N),
            _alias("y0_copy", "y0[i0, i1]", "t0[i0, i1]", N, N // 2),
            _alias("y1_copy", "y1[i0, i1]", f"t0[i0, i1 + {N // 2}]", N, N // 2),
        ),
        2 * F32 * E,
    ),
    "sum_transposed": (  # (a + b).t()
        _program(
            X + f"input x1 : f32[{N}, {N}]\ntemp t0 : f32[{N}, {N}]\noutput y0 : f32[{N}, {N}]\n",
            _kernel("add", "t0[i0, i1] = x0[i0, i1] + x1[i0, i1]", N, N),
            _alias("y0_copy", "y0[i0, i1]", "t0[i1, i0]", N, N),
        ),
        3 * F32 * E,
    ),
}
BEFORE = {  # (fused, unfused) bytes when the alias kernels were charged copies
    "transpose": (2, 2),
    "identity": (2, 2),
    "reshape": (2, 2),
    "slice": (1, 1),
    "same_output_twice": (3, 4),
    "input_and_result": (3, 4),
    "chunk": (2, 4),
    "sum_transposed": (3, 5),
}


def _as_copies(program: Program) -> Program:
    """The same program with its alias kernels as plain (charged) kernels."""
    return dataclasses.replace(
        program, kernels=tuple(dataclasses.replace(k, alias=False) for k in program.kernels)
    )


@functools.cache
def _specs() -> tuple[HardwareSpec, ...]:
    return (h100(), *list_hardware_specs())


@pytest.mark.parametrize("case", list(CASES))
def test_alias_outputs_charge_only_what_the_view_needs(case: str) -> None:
    program, nbytes = CASES[case]
    g = lift_to_einsum(program)
    c = evaluate_costs(g)
    fused = float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum())
    unfused = float(c.read_bytes.sum() + c.written_bytes.sum())
    assert (fused, unfused) == (nbytes, nbytes)
    assert all(k.flops.is_zero and not k.traffic for k in g.kernels if k.alias)
    for bound in compute_bound_set(g, h100(), cache="cold"):
        assert bound.time_s == pytest.approx(nbytes / B, rel=1e-12, abs=0.0), bound.model
    old = evaluate_costs(lift_to_einsum(_as_copies(program)))
    before = BEFORE[case]
    assert float(old.compulsory_read_bytes.sum() + old.compulsory_written_bytes.sum()) == (
        before[0] * F32 * E
    )
    assert float(old.read_bytes.sum() + old.written_bytes.sum()) == before[1] * F32 * E


def test_the_audited_129_microseconds_are_gone() -> None:
    """``return x.t()``, warm cache: (4E - C) + (4E - C) bytes at 3.35 TB/s with C = 50
    MiB was 128.96 µs in every model; now nothing moves. (The copy itself is now charged
    the periodic-loop (4E + 4E - C) bytes, 144.6 µs: Note [Warm cache].)"""
    program, _ = CASES["transpose"]
    old = compute_bound_set(lift_to_einsum(_as_copies(program)), h100(), cache="warm")
    c = 52428800.0
    for bound in old:
        assert bound.time_s == pytest.approx((2 * F32 * E - c) / B, rel=1e-12)
        assert bound.time_s == pytest.approx(144.61e-6, rel=1e-4)
    for bound in compute_bound_set(lift_to_einsum(program), h100(), cache="warm"):
        assert bound.time_s == 0.0


def test_a_slice_of_a_temp_charges_the_slice_only() -> None:
    """``(x * 2)[:, :8]`` on 64 x 64: read x (4 * 4096 B) and write the 64 x 8 elements the
    output views (4 * 512 B); a fused implementation stores no other product element."""
    program = _program(
        "input x0 : f32[64, 64]\ntemp t0 : f32[64, 64]\noutput y0 : f32[64, 8]\n",
        _kernel("mul", "t0[i0, i1] = x0[i0, i1] * 2.0", 64, 64),
        _alias("y0_copy", "y0[i0, i1]", "t0[i0, i1]", 64, 8),
    )
    c = evaluate_costs(lift_to_einsum(program))
    assert float(c.compulsory_read_bytes.sum()) == 4 * 4096
    assert float(c.compulsory_written_bytes.sum()) == 4 * 512


@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_a_viewed_temp_reaches_dram_in_the_unfused_model_too(cache: str) -> None:
    """The temp an output views is that output's storage: under a cold cache its last
    writer writes the viewed 64 x 8 elements back (not the whole 64 x 64 product), so the
    unfused DRAM bytes equal the fused ones instead of falling below them (a training
    step's transposed weight gradients were dropped from the unfused bytes)."""
    program = _program(
        "input x0 : f32[64, 64]\ntemp t0 : f32[64, 64]\noutput y0 : f32[64, 8]\n",
        _kernel("mul", "t0[i0, i1] = x0[i0, i1] * 2.0", 64, 64),
        _alias("y0_copy", "y0[i0, i1]", "t0[i0, i1]", 64, 8),
    )
    bounds = {b.model: b for b in compute_bound_set(lift_to_einsum(program), h100(),
                                                    cache=cache)}
    if cache == "cold":
        assert bounds["unfused"].dram_bytes == bounds["fused"].dram_bytes == 4 * (4096 + 512)
    else:  # everything fits the 50 MiB L2
        assert bounds["unfused"].dram_bytes == bounds["fused"].dram_bytes == 0.0


def test_the_graph_lists_alias_kernels_as_no_launch() -> None:
    text = lift_to_einsum(CASES["chunk"][0]).to_text()
    assert "kernel y0_copy [alias]: no launch" in text
    assert "kernel mul [vector f32]" in text


# -- properties ---------------------------------------------------------------------------

SHAPE = (6, 4, 10)


@st.composite
def view_chains(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[Expr, ...]]:
    """A random chain of views of ``x0 : f32[6, 4, 10]``: its shape and, for loop
    variables ``v0, v1, ...`` over that shape, the element of ``x0`` it reads."""
    shape: list[int] = list(SHAPE)
    names = [f"v{k}" for k in range(len(shape))]
    # the view's index map, as a function of its own index expressions
    index: list[Expr] = [Name(n) for n in names]

    def subst(exprs: list[Expr], mapping: dict[str, Expr]) -> list[Expr]:
        def go(e: Expr) -> Expr:
            if isinstance(e, Name) and e.name in mapping:
                return mapping[e.name]
            if isinstance(e, Binary):
                return Binary(e.op, go(e.lhs), go(e.rhs))
            return e

        return [go(e) for e in exprs]

    for _ in range(draw(st.integers(1, 4))):
        rank = len(shape)
        fresh = [f"w{k}" for k in range(rank + 1)]
        kind = draw(st.sampled_from(["permute", "slice", "broadcast", "flatten"]))
        if kind == "permute":
            perm = draw(st.permutations(range(rank)))
            mapping = {names[p]: Name(fresh[k]) for k, p in enumerate(perm)}
            shape = [shape[p] for p in perm]
            names, index = fresh[:rank], subst(index, mapping)
        elif kind == "slice":
            d = draw(st.integers(0, rank - 1))
            start = draw(st.integers(0, shape[d] - 1))
            step = draw(st.integers(1, 3))
            size = len(range(start, shape[d], step))
            mapping = {n: Name(fresh[k]) for k, n in enumerate(names)}
            mapping[names[d]] = Binary(
                "+", Binary("*", IntLit(step), Name(fresh[d])), IntLit(start)
            )
            shape[d] = size
            names, index = fresh[:rank], subst(index, mapping)
        elif kind == "broadcast":  # unsqueeze(0).expand(3, ...)
            mapping = {n: Name(fresh[k + 1]) for k, n in enumerate(names)}
            shape = [3, *shape]
            names, index = fresh[: rank + 1], subst(index, mapping)
        elif rank >= 2:  # flatten the first two dims of a (re-)indexed view
            a, b = shape[0], shape[1]
            merged = Name(fresh[0])
            mapping = {
                names[0]: Binary("//", merged, IntLit(b)),
                names[1]: Binary("%", merged, IntLit(b)),
            }
            mapping.update({n: Name(fresh[k - 1]) for k, n in enumerate(names) if k >= 2})
            shape = [a * b, *shape[2:]]
            names, index = fresh[: rank - 1], subst(index, mapping)
    return tuple(shape), tuple(subst(index, {n: Name(f"i{k}") for k, n in enumerate(names)}))


@settings(max_examples=40)
@given(view_chains(), st.sampled_from(["warm", "cold"]))
def test_an_input_returned_through_views_costs_nothing(
    chain: tuple[tuple[int, ...], tuple[Expr, ...]], cache: str
) -> None:
    shape, index = chain
    out = Access("y0", tuple(Name(f"i{k}") for k in range(len(shape))))
    body: tuple[Stmt, ...] = (Assign(out, Access("x0", index)),)
    for k in reversed(range(len(shape))):
        body = (For(f"i{k}", IntLit(0), IntLit(shape[k]), body),)
    program = Program(
        "views",
        (),
        (
            TensorDecl("x0", "input", DType.F32, tuple(IntLit(d) for d in SHAPE)),
            TensorDecl("y0", "output", DType.F32, tuple(IntLit(d) for d in shape)),
        ),
        (Kernel("y0_copy", (), body, alias=True),),
    )
    verify_program(program)
    g = lift_to_einsum(program)
    c = evaluate_costs(g)
    assert float(c.read_bytes.sum() + c.written_bytes.sum()) == 0.0
    assert float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()) == 0.0
    for spec in _specs():
        for bound in compute_bound_set(g, spec, cache=cache):  # type: ignore[arg-type]
            assert bound.time_s == 0.0, (spec.name, bound.model)


SAMPLE_NAMES = sorted(p.stem for p in (ROOT / "samples" / "ir").glob("*.alir"))


@functools.cache
def _sample(name: str) -> Program:
    return parse_program(small_ir_text(ROOT / "samples" / "ir" / f"{name}.alir"))


def _duplicated(program: Program, source: str) -> Program:
    """``program`` returning ``source`` once more, through an alias kernel."""
    decl = program.tensor(source)
    dup = TensorDecl(f"{source}_again", "output", decl.dtype, decl.shape)
    idx = tuple(Name(f"d{k}") for k in range(len(decl.shape)))
    body: tuple[Stmt, ...] = (Assign(Access(dup.name, idx), Access(source, idx)),)
    for k in reversed(range(len(decl.shape))):
        body = (For(f"d{k}", IntLit(0), decl.shape[k], body),)
    kernel = Kernel(f"{source}_again_copy", (), body, alias=True)
    return dataclasses.replace(
        program, tensors=(*program.tensors, dup), kernels=(*program.kernels, kernel)
    )


@settings(max_examples=40)
@given(st.data(), st.sampled_from(SAMPLE_NAMES), st.sampled_from(["warm", "cold"]))
def test_duplicating_an_output_never_increases_a_bound(
    data: st.DataObject, name: str, cache: str
) -> None:
    program = _sample(name)
    candidates = [t.name for t in program.tensors if t.role in ("output", "input", "param")]
    sources = data.draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True))
    more = program
    for source in sources:
        more = _duplicated(more, source)
    verify_program(more)
    before, after = lift_to_einsum(program), lift_to_einsum(more)
    spec = data.draw(st.sampled_from(_specs()))
    old = {b.model: b.time_s for b in compute_bound_set(before, spec, cache=cache)}
    new = {b.model: b.time_s for b in compute_bound_set(after, spec, cache=cache)}
    assert set(new) == set(BOUND_MODELS)
    for model, t in new.items():
        assert t <= old[model] * (1 + 1e-12), (model, spec.name, sources)


def test_a_graph_with_only_aliases_has_no_nodes() -> None:
    g: EinsumGraph = lift_to_einsum(CASES["identity"][0])
    assert [k.alias for k in g.kernels] == [True]
    assert not g.nodes and not g.edges
