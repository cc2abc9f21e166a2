"""Identical kernels are lifted once (issue 26 item 6, Note [Identical kernels]).

The memo must give exactly the leaves a fresh `lift_kernel` gives, kernel by kernel, in
one counting context: for renamed copies of a layer (which share an entry) and for
same-shaped kernels that differ in a constant, a guard, a dtype or a shape (which must
not), and for every bundled IR sample.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solar.ir as ir
from solar.einsum.counter import CountContext
from solar.einsum.leaves import Leaf, Scope, lift_kernel
from solar.einsum.memo import KernelMemo, structural_key
from solar.ir import Program, parse_program, verify_program

SAMPLES = sorted(Path(__file__).parents[2].joinpath("samples", "ir").glob("*.alir"))

# A layer: a norm over rows, a matmul and an activation plus rows gathered through an index
# tensor; {p} prefixes its tensors.
LAYER = """kernel {p}norm {{
  local {p}m : f32[B]
  for b in 0 .. B {{ {p}m[b] = 0.0
    for d in 0 .. D {{ {p}m[b] += {x}[b, d] }}
    for d in 0 .. D {{ {p}h[b, d] = {x}[b, d] - {p}m[b] / D }} }} }}
kernel {p}mm {{ for b in 0 .. B {{ for n in 0 .. D {{ {p}y[b, n] = 0.0
  for k in 0 .. D {{ {p}y[b, n] += {p}h[b, k] * {p}w[k, n] }} }} }} }}
kernel {p}act {{ for b in 0 .. B {{ for n in 0 .. D {{ if n < D - 1 {{
  {p}o[b, n] = select({p}y[b, n] > 0.0, {p}y[b, n] * {c}, 0.0) + {p}g[{p}{idx}, n] }} }} }} }}
"""
DECLS = """param {p}w : {dt}[D, D]
input {p}ix : i64[B]
param {p}g : f32[4, D]
temp {p}h : f32[B, D]
temp {p}y : f32[B, D]
{role} {p}o : f32[B, D]
"""


def _program(layers: list[dict[str, str]]) -> Program:
    """A program of ``layers`` chained: each reads the previous one's output."""
    head = "solar-ir 1\nprogram p\nsize B = 8\nsize D = 16\ninput X : f32[B, D]\n"
    decls, kernels, x = [], [], "X"
    for i, layer in enumerate(layers):
        fields = {"dt": "f32", "c": "0.5", "idx": "ix[b]", **layer, "x": x}
        role = "output" if i == len(layers) - 1 else "temp"
        decls.append(DECLS.format(role=role, **fields))
        kernels.append(LAYER.format(**fields))
        x = f"{fields['p']}o"
    program = parse_program(head + "".join(decls) + "".join(kernels))
    verify_program(program)
    return program


def _both(program: Program) -> tuple[list[list[Leaf]], list[list[Leaf]], KernelMemo]:
    """Leaves lifted fresh and through the memo, each in its own counting context."""
    scope = Scope.of(program)
    fresh_ctx, memo_ctx, memo = CountContext(), CountContext(), KernelMemo()
    fresh = [lift_kernel(scope, k, fresh_ctx) for k in program.kernels]
    memoised = [memo.lift(scope, k, memo_ctx) for k in program.kernels]
    assert fresh_ctx._deferred.keys() == memo_ctx._deferred.keys()
    return fresh, memoised, memo


def test_renamed_layers_share_one_entry() -> None:
    program = _program([{"p": f"l{i}_"} for i in range(6)])
    fresh, memoised, memo = _both(program)
    assert memoised == fresh
    # three kernels per layer; the first norm reads the input and the last activation
    # writes the output (other roles), so 5 entries serve 18 kernels
    assert len(memo._seen) == 5
    assert [g for _, _, g in memo._seen.values()].count(True) == 2  # the activations gather


# Same shape, one difference each: these must not share an entry with the base layer.
# Each: the change to the middle of three layers, and how many entries it adds.
VARIANTS = {
    "constant": ({"c": "0.25"}, 1),
    "dtype": ({"dt": "bf16"}, 1),
    "gather_row": ({"idx": "ix[0]"}, 1),
    # the convolution flag reads names: b's mm and act get entries of their own, and b's
    # norm shares one with c's (which reads conv_o)
    "name_with_conv": ({"p": "conv_"}, 2),
}


@pytest.mark.parametrize(("change", "touched"), list(VARIANTS.values()), ids=list(VARIANTS))
def test_differing_kernels_do_not_share(change: dict[str, str], touched: int) -> None:
    program = _program([{"p": "a_"}, {"p": "b_", **change}, {"p": "c_"}])
    fresh, memoised, memo = _both(program)
    assert memoised == fresh
    # unchanged, three layers take 5 entries (as above)
    assert len(memo._seen) == 5 + touched


def test_guard_bound_and_shape_changes_are_other_keys() -> None:
    head = "solar-ir 1\nprogram p\nsize B = 8\nsize D = 16\ninput X : f32[B, D]\n"
    decls = DECLS.format(p="a_", dt="f32", role="output")
    text = LAYER.format(p="a_", x="X", c="0.5", idx="ix[b]")

    def key(decls: str, text: str) -> object:
        program = parse_program(head + decls + text)
        return structural_key(Scope.of(program), program.kernels[2])[0]

    base = key(decls, text)
    for old, new in (("n < D - 1", "n < D - 2"), ("0 .. D { if", "1 .. D { if")):
        assert old in text
        assert key(decls, text.replace(old, new)) != base
    assert key(decls.replace("[4, D]", "[5, D]"), text) != base
    assert key(decls, text.replace("a_", "z_")) != base  # the declarations are a_'s
    assert key(decls.replace("a_", "z_"), text.replace("a_", "z_")) == base


_NAME = st.from_regex(r"[a-z][a-z0-9]{0,5}_", fullmatch=True)


@settings(max_examples=25, deadline=None)
@given(st.lists(_NAME, min_size=2, max_size=5, unique=True), st.data())
def test_random_renamings_match_fresh_lift(prefixes: list[str], data: st.DataObject) -> None:
    layers = [
        {"p": p, "c": data.draw(st.sampled_from(["0.5", "0.25"])),
         "dt": data.draw(st.sampled_from(["f32", "f16"]))}
        for p in prefixes
    ]
    fresh, memoised, _ = _both(_program(layers))
    assert memoised == fresh


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_samples_lift_identically(path: Path) -> None:
    program = parse_program(path.read_text(), filename=str(path))
    fresh, memoised, _ = _both(program)
    assert memoised == fresh


# The fields the structural key reads, per node class; a new field must join the key.
CENSUS = {
    "Kernel": ["name", "locals", "body", "alias", "collective", "inplace", "span"],
    "TensorDecl": ["name", "role", "dtype", "shape", "span"],
    "Assign": ["target", "value", "span"],
    "Reduce": ["target", "op", "value", "span"],
    "For": ["var", "lo", "hi", "body", "step", "seq", "span"],
    "If": ["cond", "body", "span"],
    "Access": ["tensor", "indices", "span"],
    "Unary": ["op", "operand", "span"],
    "Binary": ["op", "lhs", "rhs", "span"],
    "Call": ["func", "args", "span"],
    "Cast": ["dtype", "operand", "span"],
}


@pytest.mark.parametrize("cls", list(CENSUS))
def test_key_covers_every_field(cls: str) -> None:
    assert [f.name for f in dataclasses.fields(getattr(ir, cls))] == CENSUS[cls]
