"""Benchmark: evaluate all three bound models on a 2,000-kernel graph at 100 bindings.

Run: ``.venv/bin/python benchmarks/bounds.py [--kernels 2000] [--bindings 100]``.

The program is generated: blocks of (matmul, GELU, padded 3x3 convolution)
kernels, like a stack of transformer MLPs beside a conv stack. It is parsed and
lifted once (the baseline, measured in the same process), the graph's counts are
compiled once (`compile_costs`), and then `compute_bound_set` evaluates every model at
every binding.
Prints a table of timings.
"""

from __future__ import annotations

import argparse
import random
import time

from solar.bounds import BOUND_MODELS, compile_costs, compute_bound_set
from solar.einsum import lift_to_einsum
from solar.hw import load_hardware_spec
from solar.ir import parse_program

HEADER = """solar-ir 1
program generated

size M = 512
size D = 256
size N = 2
size C = 16
size H = 32
size W = 32
"""


def generate(n_kernels: int) -> str:
    """IR text of a program with ``n_kernels`` kernels (matmul, GELU, conv, ...)."""
    blocks = (n_kernels + 2) // 3
    decls = ["input X0 : f32[M, D]", "input Z0 : f32[N, C, H, W]"]
    kernels = []
    count = 0
    for i in range(1, blocks + 1):
        last = i == blocks
        decls.append(f"param Wm{i} : f32[D, D]")
        decls.append(f"param Wc{i} : f32[C, C, 3, 3]")
        decls.append(f"temp H{i} : f32[M, D]")
        decls.append(f"{'output' if last else 'temp'} X{i} : f32[M, D]")
        decls.append(f"{'output' if last else 'temp'} Z{i} : f32[N, C, H, W]")
        body = [
            f"kernel mm{i} {{ for m in 0 .. M {{ for n in 0 .. D {{ H{i}[m, n] = 0.0\n"
            f"  for k in 0 .. D {{ H{i}[m, n] += X{i - 1}[m, k] * Wm{i}[n, k] }} }} }} }}",
            f"kernel gelu{i} {{ for m in 0 .. M {{ for n in 0 .. D {{\n"
            f"  X{i}[m, n] = 0.5 * H{i}[m, n] * (1.0 + erf(H{i}[m, n] * 0.7071067811865476))"
            " } } }",
            f"kernel conv{i} {{ for n in 0 .. N {{ for f in 0 .. C {{ for h in 0 .. H {{"
            f" for w in 0 .. W {{\n  Z{i}[n, f, h, w] = 0.0\n"
            "  for c in 0 .. C { for r in 0 .. 3 { for s in 0 .. 3 {\n"
            "    if 0 <= h + r - 1 and h + r - 1 < H and 0 <= w + s - 1 and w + s - 1 < W {\n"
            f"      Z{i}[n, f, h, w] += Z{i - 1}[n, c, h + r - 1, w + s - 1] * Wc{i}[f, c, r, s]"
            " } } } } } } } } }",
        ]
        for k in body:
            if count < n_kernels:
                kernels.append(k)
                count += 1
    return HEADER + "\n".join(decls) + "\n\n" + "\n\n".join(kernels) + "\n"


def main() -> None:
    """Run the benchmark and print the timing table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernels", type=int, default=2000)
    ap.add_argument("--bindings", type=int, default=100)
    args = ap.parse_args()
    spec = load_hardware_spec("H100_SXM")
    rng = random.Random(0)
    bindings = [
        {"M": rng.choice([128, 512, 2048, 8192]), "D": rng.choice([256, 1024, 4096]),
         "N": rng.choice([1, 8, 32]), "C": rng.choice([16, 64, 256]),
         "H": rng.choice([14, 28, 56, 112]), "W": rng.choice([14, 28, 56, 112])}
        for _ in range(args.bindings)
    ]
    t0 = time.perf_counter()
    program = parse_program(generate(args.kernels))
    t1 = time.perf_counter()
    graph = lift_to_einsum(program)
    t2 = time.perf_counter()
    compiled = compile_costs(graph)
    compiled.evaluate(bindings[0])
    t3 = time.perf_counter()
    results = 0
    for sizes in bindings:
        results += len(compute_bound_set(compiled, spec, models=tuple(BOUND_MODELS), sizes=sizes))
    t4 = time.perf_counter()
    evaluation = t4 - t3
    rows = [
        ("parse", t1 - t0),
        ("lift (baseline)", t2 - t1),
        ("compile counts (first evaluation)", t3 - t2),
        (f"evaluate {results} bounds ({args.bindings} bindings x 3 models)", evaluation),
        ("  per binding (3 models)", evaluation / args.bindings),
        ("  per bound", evaluation / results),
    ]
    print(f"bounds benchmark: {len(graph.kernels)} kernels, {len(graph.nodes)} nodes")
    width = max(len(r[0]) for r in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds * 1e3:10.2f} ms")
    print(f"evaluation / lift = {evaluation / (t2 - t1):.3f}")


if __name__ == "__main__":
    main()
