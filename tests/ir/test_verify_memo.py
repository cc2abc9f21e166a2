"""Identical kernels verified once (Note [Verifying identical kernels] in solar.ir.verify):
the facts are each kernel's own, and an error is reported at the kernel that has it."""

from __future__ import annotations

import pytest

from solar.diagnostics import IRVerifyError
from solar.ir import Access, If, Program, collect_errors, parse_program, verify_program
from solar.ir.traversal import walk_exprs, walk_stmts

HEAD = "solar-ir 1\nprogram p\nsize N = 8\ninput X : f32[N]\ninput I : i64[N]\n"

# A layer with a gather, a value-dependent if, a local and an affine guard.
LAYER = """
kernel {k} {{
  local {t} : f32[N]
  for i in 0 .. N {{
    {t}[i] = X[I[i]] + {src}[i]
    if X[i] > 0.0 {{
      {dst}[i] = {t}[i]
    }}
    if i < 3 {{
      {dst}[{idx}] = 2.0
    }}
    {dst}[{out}] = {t}[i] * 0.5
  }}
}}
"""


def _layers(n: int, bad: dict[int, str] | None = None) -> tuple[str, list[int]]:
    """``n`` layers chained A0 -> A1 -> ...; layer ``j`` in ``bad`` writes ``bad[j]`` as
    its last subscript. Returns the text and each kernel's offset in it."""
    decls = "".join(f"{'output' if j == n - 1 else 'temp'} A{j} : f32[N]\n" for j in range(n))
    text, offsets = HEAD + decls, []
    for j in range(n):
        offsets.append(len(text))
        out = (bad or {}).get(j, "i")
        src = "X" if j == 0 else f"A{j - 1}"
        text += LAYER.format(k=f"layer{j}", t=f"t{j}", src=src, dst=f"A{j}", idx="i", out=out)
    return text, offsets


def _own_facts(program: Program) -> tuple[list[Access], list[If]]:
    """Each kernel's gathers and value-dependent ifs, found directly."""
    gathers: list[Access] = []
    ifs: list[If] = []
    for k in program.kernels:
        for st, _ in walk_stmts(k.body):
            if isinstance(st, If):
                if any(isinstance(e, Access) for e in walk_exprs(st.cond)):
                    ifs.append(st)
                continue
            if hasattr(st, "target"):
                gathers += [e for e in walk_exprs(st.value) if isinstance(e, Access)
                            and any(isinstance(x, Access) for i in e.indices
                                    for x in walk_exprs(i))]
    return gathers, ifs


def test_identical_layers_keep_their_own_facts() -> None:
    program = parse_program(_layers(4)[0])
    info = verify_program(program)
    gathers, ifs = _own_facts(program)
    assert len(gathers) == len(ifs) == 4
    # the very nodes of each kernel, not the first kernel's
    assert all(a is b for a, b in zip(info.indirect_accesses, gathers, strict=True))
    assert all(a is b for a, b in zip(info.value_dependent_ifs, ifs, strict=True))
    assert list(info.writers.items()) == [
        (t, (f"layer{j}",)) for j in range(4) for t in (f"t{j}", f"A{j}")
    ]


@pytest.mark.parametrize("bad_layer", [1, 2, 3])
def test_error_in_a_later_identical_kernel_points_at_it(bad_layer: int) -> None:
    text, offsets = _layers(4, {bad_layer: "i + 1"})
    program = parse_program(text)
    with pytest.raises(IRVerifyError) as raised:
        verify_program(program)
    errors = collect_errors(program)
    assert [e.code for e in errors] == ["E0216"]
    for err in (raised.value, errors[0]):
        assert err.code == "E0216"
        assert err.span is not None
        end = offsets[bad_layer + 1] if bad_layer + 1 < len(offsets) else len(text)
        assert offsets[bad_layer] <= err.span.start < end
        assert text[err.span.start:err.span.end] == "i + 1"


def test_an_error_in_every_identical_kernel_is_reported_at_each() -> None:
    text, offsets = _layers(3, {0: "i + 1", 1: "i + 1", 2: "i + 1"})
    errors = collect_errors(parse_program(text))
    assert [e.code for e in errors] == ["E0216"] * 3
    starts = [e.span.start for e in errors if e.span is not None]
    assert [sum(s >= o for o in offsets) - 1 for s in starts] == [0, 1, 2]


def test_identical_kernel_under_a_taken_name_is_checked() -> None:
    text, _ = _layers(2)
    text = text.replace("kernel layer1", "kernel layer0")
    errors = collect_errors(parse_program(text))
    assert [e.code for e in errors] == ["E0202"]
    assert "layer0" in errors[0].message


def test_identical_kernel_whose_local_clashes_is_checked() -> None:
    text, offsets = _layers(2)
    text = text[: offsets[1]] + text[offsets[1]:].replace("t1", "t0")  # t0 is layer0's
    errors = collect_errors(parse_program(text))
    assert errors[0].code == "E0202"
    assert {e.code for e in errors[1:]} == {"E0215"}  # layer1 uses layer0's local
    assert all(e.span is not None and e.span.start > offsets[1] for e in errors)
