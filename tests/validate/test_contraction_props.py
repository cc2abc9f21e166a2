"""Property: random small contraction programs equal ``np.einsum``."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from solar.ir import parse_program
from solar.validate import execute_program
from solar.validate.contraction import contract, split_product

VARS = "abcd"


@st.composite
def contractions(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray], np.ndarray]:
    n_vars = draw(st.integers(2, 4))
    names = VARS[:n_vars]
    extents = {v: draw(st.integers(1, 4)) for v in names}
    n_ops = draw(st.integers(1, 3))
    operands = []
    for _ in range(n_ops):
        rank = draw(st.integers(1, 3))
        operands.append("".join(draw(st.sampled_from(names)) for _ in range(rank)))
    out = draw(st.permutations(names).map(lambda p: "".join(p)))
    out = out[: draw(st.integers(0, n_vars))]
    loop_order = draw(st.permutations(names))
    guard = draw(st.booleans()) and n_vars >= 2
    scale = draw(st.sampled_from(["", "2.0 * ", "-0.5 * "]))
    wrap = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))

    rng = np.random.default_rng(seed)
    arrays = {
        f"T{k}": rng.standard_normal(tuple(extents[v] for v in idx)).astype(np.float32)
        for k, idx in enumerate(operands)
    }
    decls = [f"size N{v} = {extents[v]}" for v in names]
    decls += [
        f"input T{k} : f32[{', '.join('N' + v for v in idx)}]" for k, idx in enumerate(operands)
    ]
    decls.append(f"output O : f32[{', '.join('N' + v for v in out)}]")
    target = f"O[{', '.join(out)}]"
    factors = [f"T{k}[{', '.join(idx)}]" for k, idx in enumerate(operands)]
    if wrap:
        factors[0] = f"({factors[0]} + 0.0)"
    statement = f"{target} += {scale}{' * '.join(factors)}"
    if guard:
        statement = f"if {names[0]} <= {names[1]} {{ {statement} }}"
    init = f"{target} = 0.0"
    for v in reversed(out):
        init = f"for {v} in 0 .. N{v} {{ {init} }}"
    nest = statement
    for v in reversed(loop_order):
        nest = f"for {v} in 0 .. N{v} {{ {nest} }}"
    text = "solar-ir 1\nprogram c\n" + "\n".join(decls) + f"\nkernel k {{\n{init}\n{nest}\n}}\n"

    # The all-ones operand spans the whole iteration space: loops that no operand
    # uses multiply the sum by their trip count, as the IR's semantics say.
    subs = ",".join([*operands, names])
    terms = [arrays[f"T{k}"].astype(np.float64) for k in range(n_ops)]
    terms.append(np.ones(tuple(extents[v] for v in names)))
    if guard:
        a, b = names[0], names[1]
        mask = np.arange(extents[a])[:, None] <= np.arange(extents[b])[None, :]
        subs += f",{a}{b}"
        terms.append(mask.astype(np.float64))
    expected = np.einsum(f"{subs}->{out}", *terms)
    factor = {"": 1.0, "2.0 * ": 2.0, "-0.5 * ": -0.5}[scale]
    return text, arrays, expected * factor


@given(contractions())
def test_random_contraction_equals_einsum(
    case: tuple[str, dict[str, np.ndarray], np.ndarray],
) -> None:
    text, arrays, expected = case
    got = execute_program(parse_program(text), arrays)["O"]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=text)


@given(
    st.lists(st.integers(1, 5), min_size=4, max_size=4),
    st.integers(0, 2**16),
)
def test_contract_helper_equals_einsum(extents: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((extents[0], extents[1], extents[2]))
    b = rng.standard_normal((extents[2], extents[1], extents[3]))
    got = contract([(a, (0, 1, 2)), (b, (2, 1, 3))], (0, 3), extents)
    np.testing.assert_allclose(got, np.einsum("ijk,kjl->il", a, b), rtol=1e-10, atol=1e-10)


def test_split_product_folds_literals_and_division() -> None:
    from solar.ir import parse_expr, print_expr

    scale, factors = split_product(parse_expr("2.0 * -(A[i] * B[i]) / 4"))
    assert scale == -0.5
    assert [print_expr(e) for e, _ in factors] == ["A[i]", "B[i]"]
