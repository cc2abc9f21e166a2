"""Benchmark: lifting a kernel whose reads and writes are K unorderable pieces (issue 17).

Run: ``.venv/bin/python benchmarks/unions.py [--pieces 4 8 16 32 64] [--old-max 16]``.

A padded or concatenated tensor is read and written in pieces whose counts sympy cannot
order (``R3*C3`` against ``R5*C5``: derived sizes are opaque symbols), so each union is
a max of K counts (samples/torch/pad_modes.py took 34-140 s in `lift_to_einsum`). The
generated kernel copies K sub-rectangles of ``x`` into ``y[k, ...]``; each K is lifted in
a fresh graph. The baseline, measured in the same run, folds the same K read counts the
way the lift did before (``sympy.Max`` one piece at a time, every pair re-ordered at each
step), up to ``--old-max`` pieces; the ratio is baseline / now for that fold alone.
"""

from __future__ import annotations

import argparse
import functools
import time

import sympy  # the baseline is sympy's own fold

from solar.einsum import EinsumGraph, lift_to_einsum
from solar.ir import parse_program


def generate(pieces: int) -> str:
    """IR text: ``y[k, i, j] = x[i + k - 1, j - 1]`` for ``1 <= i < R{k}``, ``1 <= j < C{k}``."""
    lines = ["solar-ir 1", "program unions", "size B = 256", "size W = 256"]
    for k in range(pieces):
        lines += [f"size R{k} = B - {k + 1}", f"size C{k} = W - {2 * k + 1}"]
    lines += ["input x : f32[B, W]", f"output y : f32[{pieces}, B, W]", "kernel pieces {"]
    for k in range(pieces):
        body = f"y[{k}, i, j] = x[i + {k} - 1, j - 1]"
        lines.append(f"  for i in 1 .. R{k} {{ for j in 1 .. C{k} {{ {body} }} }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _read_counts(graph: EinsumGraph) -> list[object]:
    """The read counts of ``x``, one per statement (the pieces the lift took the max of)."""
    return [c.expr for node in graph.nodes for name, c, _ in node.reads if name == "x"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pieces", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    parser.add_argument("--old-max", type=int, default=16)
    args = parser.parse_args()
    print(f"{'pieces':>6} {'lift s':>8} {'old fold s':>10} {'ratio':>7}  read count")
    for k in args.pieces:
        program = parse_program(generate(k))
        start = time.perf_counter()
        graph = lift_to_einsum(program)
        lift_s = time.perf_counter() - start
        reads = next(t for t in graph.kernels[0].traffic if t.tensor == "x").raw_read_elems
        pieces = _read_counts(graph)
        old_txt, ratio_txt = f"{'-':>10}", f"{'-':>7}"
        if k <= args.old_max:
            start = time.perf_counter()
            old = functools.reduce(sympy.Max, pieces)
            old_s = time.perf_counter() - start
            assert old == reads.expr, (old, reads.expr)
            old_txt, ratio_txt = f"{old_s:10.2f}", f"{old_s / lift_s:7.1f}"
        print(f"{k:6d} {lift_s:8.2f} {old_txt} {ratio_txt}  "
              f"{reads.formula[:40]}{'...' if len(reads.formula) > 40 else ''}", flush=True)


if __name__ == "__main__":
    main()
