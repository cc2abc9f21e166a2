"""Collective kernels lift as zero-FLOP, zero-byte kernels (their bytes are link traffic)."""

from __future__ import annotations

from pathlib import Path

from solar.einsum import lift_to_einsum
from solar.ir import collectives, parse_program

ROOT = Path(__file__).resolve().parents[2]


def test_tp_mlp_lifts_with_a_free_collective() -> None:
    program = parse_program((ROOT / "samples" / "dist" / "tp_mlp.alir").read_text())
    graph = lift_to_einsum(program)
    by_name = {k.name: k for k in graph.kernels}
    sizes = {"W": 2, "B": 4, "D": 16, "F": 32, "Fl": 16}
    coll = by_name["all_reduce_p"]
    assert coll.flops.evaluate(sizes) == 0
    assert coll.bytes.evaluate(sizes) == 0
    # mm1 and mm2 are B * Fl * D multiply-adds each, relu one max per element
    flops = sum(k.flops.evaluate(sizes) for k in graph.kernels)
    assert flops == 2 * (2 * 4 * 16 * 16) + 4 * 16
    (info,) = collectives(program)
    assert (info.kind, info.buffer_bytes, info.group_size) == ("all_reduce", 4 * 16 * 4, 2)
