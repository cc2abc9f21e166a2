"""Benchmark: parse_program + verify_program throughput on a large generated program.

Prints a table of lines/s and statements/s for the raw Lark parse (the baseline: the
LALR parse to a tree, no AST building), `parse_program` (brackets check + tree + AST
with spans) and `verify_program`, at 1/4, 1/2 and 1x program size (1x is over 10,000
statements), so both our overhead over Lark and linear scaling are visible. Best of 3
runs each, with the garbage collector paused while timing (as `timeit` does).
Run: ``python benchmarks/parse.py [--kernels N]``.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from functools import partial

from solar.ir import parse_program, verify_program, walk_stmts
from solar.ir.grammar import ir_parser

KERNEL_TEMPLATES = (
    # elementwise with a function and a cast
    """kernel ew{n} {{
  for b in 0 .. B {{
    for d in 0 .. D {{
      T{n}[b, d] = f32(0.5) * T{p}[b, d] * (1.0 + erf(T{p}[b, d] * 0.7071067811865476))
      T{n}[b, d] = select(T{n}[b, d] > 0.0, T{n}[b, d], -T{n}[b, d] / 2.0)
    }}
  }}
}}""",
    # matmul-like reduction with a kernel-local accumulator
    """kernel mm{n} {{
  local acc{n} : f32[B, D]
  for b in 0 .. B {{
    for d in 0 .. D {{
      acc{n}[b, d] = 0.0
      for k in 0 .. D {{
        acc{n}[b, d] += T{p}[b, k] * W[k, d]
      }}
      T{n}[b, d] = acc{n}[b, d] + bias[d]
    }}
  }}
}}""",
    # guarded 1-D convolution along d (padding 1)
    """kernel conv{n} {{
  for b in 0 .. B {{
    for d in 0 .. D {{
      T{n}[b, d] = 0.0
      for r in 0 .. 3 {{
        if 0 <= d + r - 1 and d + r - 1 < D {{
          T{n}[b, d] += T{p}[b, d + r - 1] * taps[r]
        }}
      }}
    }}
  }}
}}""",
    # row softmax with max/sum reductions
    """kernel sm{n} {{
  local mx{n} : f32[B]
  local sum{n} : f32[B]
  for b in 0 .. B {{
    mx{n}[b] = -inf
    for d in 0 .. D {{
      mx{n}[b] max= T{p}[b, d]
    }}
    sum{n}[b] = 0.0
    for d in 0 .. D {{
      T{n}[b, d] = exp(T{p}[b, d] - mx{n}[b])
      sum{n}[b] += T{n}[b, d]
    }}
    for d in 0 .. D {{
      T{n}[b, d] = T{n}[b, d] / sum{n}[b]
    }}
  }}
}}""",
    # prefix sum (seq loop) and a strided copy
    """kernel scan{n} {{
  for b in 0 .. B {{
    T{n}[b, 0] = T{p}[b, 0]
    seq for d in 1 .. D {{
      T{n}[b, d] = T{n}[b, d - 1] + T{p}[b, d]
    }}
    for d in 0 .. D // 2 {{
      T{n}[b, 2 * d] = T{n}[b, 2 * d] * 0.5 + T{p}[b, d % 4]
    }}
  }}
}}""",
)


def make_program(n_kernels: int) -> str:
    """A chain of ``n_kernels`` kernels over temps T1..Tn (T0 is the input)."""
    lines = ["solar-ir 1", "program bench", "", "size B = 8", "size D = 64", ""]
    lines += ["input T0 : f32[B, D]", "param W : f32[D, D]", "param bias : f32[D]"]
    lines.append("param taps : f32[3]")
    for n in range(1, n_kernels + 1):
        role = "output" if n == n_kernels else "temp"
        lines.append(f"{role} T{n} : f32[B, D]")
    lines.append("")
    for n in range(1, n_kernels + 1):
        template = KERNEL_TEMPLATES[n % len(KERNEL_TEMPLATES)]
        lines += [template.format(n=n, p=n - 1), ""]
    return "\n".join(lines)


def best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best wall time of ``repeats`` calls, in seconds."""
    times = []
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return min(times)


def main() -> None:
    """Run the benchmark and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", type=int, default=1600, help="kernels at 1x size")
    args = ap.parse_args()
    header = (
        f"{'size':>4} {'lines':>7} {'stmts':>7} | {'stage':<22} {'time_s':>8} "
        f"{'lines/s':>10} {'stmts/s':>10} {'vs lark':>8}"
    )
    print(header)
    print("-" * len(header))
    per_stmt: list[float] = []
    for scale in (4, 2, 1):
        text = make_program(args.kernels // scale)
        program = parse_program(text)
        n_lines = text.count("\n") + 1
        n_stmts = sum(1 for k in program.kernels for _ in walk_stmts(k.body))
        t_lark = best_of(partial(ir_parser().parse, text))
        t_parse = best_of(partial(parse_program, text))
        t_verify = best_of(partial(verify_program, program))
        label = "1" if scale == 1 else f"1/{scale}"
        for stage, t in (
            ("lark parse (baseline)", t_lark),
            ("parse_program", t_parse),
            ("verify_program", t_verify),
            ("parse + verify", t_parse + t_verify),
        ):
            print(
                f"{label:>4} {n_lines:>7} {n_stmts:>7} | {stage:<22} {t:>8.3f} "
                f"{n_lines / t:>10.0f} {n_stmts / t:>10.0f} {t / t_lark:>7.2f}x"
            )
        per_stmt.append((t_parse + t_verify) / n_stmts)
    growth = per_stmt[-1] / per_stmt[0]
    print(f"\nparse+verify time per statement, 1x vs 1/4 size: {growth:.2f} (1.00 = linear)")


if __name__ == "__main__":
    main()
