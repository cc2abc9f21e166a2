"""Benchmark: the vectorised IR executor against torch eager on CPU (2 threads).

Each case writes the IR of one computation (parametrised by sizes), runs it with
`solar.validate.execute_program`, runs the same computation with torch eager ops in the
same process, checks that both agree, and prints the best-of-N wall times and their
ratio (executor / torch). Target: geometric-mean ratio <= 3, no case above 10.

Run: ``.venv/bin/python benchmarks/executor.py [--repeat N] [--only NAME ...]``.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812

from solar.ir import parse_program, print_program
from solar.validate import execute_program


@dataclass(frozen=True)
class Case:
    """One benchmark: IR text, its inputs, and the torch computation."""

    name: str
    ir: str
    inputs: dict[str, np.ndarray]
    torch_fn: Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]]


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def matmul(rng: np.random.Generator, n: int = 1024) -> Case:
    ir = f"""solar-ir 1
program matmul
size M = {n}
size N = {n}
size K = {n}
input A : f32[M, K]
input B : f32[K, N]
output C : f32[M, N]
kernel matmul {{
  for i in 0 .. M {{
    for j in 0 .. N {{
      C[i, j] = 0.0
      for k in 0 .. K {{
        C[i, j] += A[i, k] * B[k, j]
      }}
    }}
  }}
}}
"""
    return Case(
        f"matmul {n}^3",
        ir,
        {"A": _rand(rng, n, n), "B": _rand(rng, n, n)},
        lambda t: {"C": t["A"] @ t["B"]},
    )


def conv2d(rng: np.random.Generator, n: int = 8, c: int = 64, f: int = 128, hw: int = 56) -> Case:
    ir = f"""solar-ir 1
program conv2d
size N = {n}
size C = {c}
size F = {f}
size H = {hw}
size W = {hw}
input X : f32[N, C, H, W]
param Wt : f32[F, C, 3, 3]
param bias : f32[F]
output Y : f32[N, F, H, W]
kernel conv2d {{
  for n in 0 .. N {{
    for f in 0 .. F {{
      for h in 0 .. H {{
        for w in 0 .. W {{
          Y[n, f, h, w] = bias[f]
          for c in 0 .. C {{
            for r in 0 .. 3 {{
              for s in 0 .. 3 {{
                if 0 <= h + r - 1 and h + r - 1 < H and 0 <= w + s - 1 and w + s - 1 < W {{
                  Y[n, f, h, w] += X[n, c, h + r - 1, w + s - 1] * Wt[f, c, r, s]
                }}
              }}
            }}
          }}
        }}
      }}
    }}
  }}
}}
"""
    return Case(
        f"conv2d 3x3 {n}x{c}->{f} {hw}^2",
        ir,
        {"X": _rand(rng, n, c, hw, hw), "Wt": _rand(rng, f, c, 3, 3), "bias": _rand(rng, f)},
        lambda t: {"Y": F.conv2d(t["X"], t["Wt"], t["bias"], padding=1)},
    )


def depthwise(rng: np.random.Generator, n: int = 8, c: int = 128, hw: int = 56) -> Case:
    ir = f"""solar-ir 1
program depthwise
size N = {n}
size C = {c}
size H = {hw}
size W = {hw}
input X : f32[N, C, H, W]
param Wt : f32[C, 1, 3, 3]
param bias : f32[C]
output Y : f32[N, C, H, W]
kernel depthwise {{
  for n in 0 .. N {{
    for c in 0 .. C {{
      for h in 0 .. H {{
        for w in 0 .. W {{
          Y[n, c, h, w] = bias[c]
          for r in 0 .. 3 {{
            for s in 0 .. 3 {{
              if 0 <= h + r - 1 and h + r - 1 < H and 0 <= w + s - 1 and w + s - 1 < W {{
                Y[n, c, h, w] += X[n, c, h + r - 1, w + s - 1] * Wt[c, 0, r, s]
              }}
            }}
          }}
        }}
      }}
    }}
  }}
}}
"""
    return Case(
        f"depthwise 3x3 {n}x{c} {hw}^2",
        ir,
        {"X": _rand(rng, n, c, hw, hw), "Wt": _rand(rng, c, 1, 3, 3), "bias": _rand(rng, c)},
        lambda t: {"Y": F.conv2d(t["X"], t["Wt"], t["bias"], padding=1, groups=c)},
    )


def maxpool(rng: np.random.Generator, n: int = 8, c: int = 64, hw: int = 112) -> Case:
    ir = f"""solar-ir 1
program maxpool
size N = {n}
size C = {c}
size H = {hw}
size W = {hw}
size Ho = (H + 2 - 3) // 2 + 1
size Wo = (W + 2 - 3) // 2 + 1
input X : f32[N, C, H, W]
output Y : f32[N, C, Ho, Wo]
kernel maxpool {{
  for n in 0 .. N {{
    for c in 0 .. C {{
      for h in 0 .. Ho {{
        for w in 0 .. Wo {{
          Y[n, c, h, w] = -inf
          for r in 0 .. 3 {{
            for s in 0 .. 3 {{
              if 0 <= 2 * h + r - 1 and 2 * h + r - 1 < H
                 and 0 <= 2 * w + s - 1 and 2 * w + s - 1 < W {{
                Y[n, c, h, w] max= X[n, c, 2 * h + r - 1, 2 * w + s - 1]
              }}
            }}
          }}
        }}
      }}
    }}
  }}
}}
"""
    return Case(
        f"maxpool 3x3/2 {n}x{c} {hw}^2",
        ir,
        {"X": _rand(rng, n, c, hw, hw)},
        lambda t: {"Y": F.max_pool2d(t["X"], 3, 2, 1)},
    )


def softmax(rng: np.random.Generator, rows: int = 64, cols: int = 4096) -> Case:
    ir = f"""solar-ir 1
program softmax
size R = {rows}
size N = {cols}
input X : f32[R, N]
output Y : f32[R, N]
kernel softmax {{
  local mx : f32[R]
  local sm : f32[R]
  for b in 0 .. R {{
    mx[b] = -inf
    for n in 0 .. N {{
      mx[b] max= X[b, n]
    }}
    sm[b] = 0.0
    for n in 0 .. N {{
      Y[b, n] = exp(X[b, n] - mx[b])
      sm[b] += Y[b, n]
    }}
    for n in 0 .. N {{
      Y[b, n] = Y[b, n] / sm[b]
    }}
  }}
}}
"""
    return Case(
        f"softmax ({rows}, {cols})",
        ir,
        {"X": _rand(rng, rows, cols)},
        lambda t: {"Y": torch.softmax(t["X"], dim=-1)},
    )


def layernorm(rng: np.random.Generator, rows: int = 64, cols: int = 4096) -> Case:
    ir = f"""solar-ir 1
program layernorm
size R = {rows}
size D = {cols}
input X : f32[R, D]
param gamma : f32[D]
param beta : f32[D]
output Y : f32[R, D]
kernel layernorm {{
  local mean : f32[R]
  local var : f32[R]
  local rstd : f32[R]
  for b in 0 .. R {{
    mean[b] = 0.0
    for d in 0 .. D {{
      mean[b] += X[b, d]
    }}
    mean[b] = mean[b] / D
    var[b] = 0.0
    for d in 0 .. D {{
      var[b] += (X[b, d] - mean[b]) * (X[b, d] - mean[b])
    }}
    rstd[b] = rsqrt(var[b] / D + 1e-05)
    for d in 0 .. D {{
      Y[b, d] = (X[b, d] - mean[b]) * rstd[b] * gamma[d] + beta[d]
    }}
  }}
}}
"""
    return Case(
        f"layernorm ({rows}, {cols})",
        ir,
        {"X": _rand(rng, rows, cols), "gamma": _rand(rng, cols), "beta": _rand(rng, cols)},
        lambda t: {"Y": F.layer_norm(t["X"], (cols,), t["gamma"], t["beta"], 1e-5)},
    )


def attention(rng: np.random.Generator, b: int = 4, h: int = 8, s: int = 512, d: int = 64) -> Case:
    scale = 1.0 / math.sqrt(d)
    ir = f"""solar-ir 1
program attention
size B = {b}
size Hh = {h}
size L = {s}
size Dh = {d}
input Q : f32[B, Hh, L, Dh]
input K : f32[B, Hh, L, Dh]
input V : f32[B, Hh, L, Dh]
output O : f32[B, Hh, L, Dh]
kernel attention {{
  local S : f32[B, Hh, L, L]
  local mx : f32[B, Hh, L]
  local sm : f32[B, Hh, L]
  for b in 0 .. B {{
    for h in 0 .. Hh {{
      for i in 0 .. L {{
        for j in 0 .. L {{
          S[b, h, i, j] = 0.0
          for d in 0 .. Dh {{
            S[b, h, i, j] += Q[b, h, i, d] * K[b, h, j, d] * {scale!r}
          }}
        }}
        mx[b, h, i] = -inf
        for j in 0 .. L {{
          mx[b, h, i] max= S[b, h, i, j]
        }}
        sm[b, h, i] = 0.0
        for j in 0 .. L {{
          S[b, h, i, j] = exp(S[b, h, i, j] - mx[b, h, i])
          sm[b, h, i] += S[b, h, i, j]
        }}
        for d in 0 .. Dh {{
          O[b, h, i, d] = 0.0
          for j in 0 .. L {{
            O[b, h, i, d] += S[b, h, i, j] * V[b, h, j, d]
          }}
          O[b, h, i, d] = O[b, h, i, d] / sm[b, h, i]
        }}
      }}
    }}
  }}
}}
"""

    def torch_fn(t: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        p = torch.softmax(t["Q"] @ t["K"].transpose(-1, -2) * scale, dim=-1)
        return {"O": p @ t["V"]}

    shape = (b, h, s, d)
    return Case(
        f"attention B{b} H{h} S{s} D{d}",
        ir,
        {k: _rand(rng, *shape) for k in ("Q", "K", "V")},
        torch_fn,
    )


def cumsum(rng: np.random.Generator, rows: int = 64, cols: int = 8192) -> Case:
    ir = f"""solar-ir 1
program cumsum
size B = {rows}
size N = {cols}
input X : f32[B, N]
output Y : f32[B, N]
kernel cumsum {{
  for b in 0 .. B {{
    Y[b, 0] = X[b, 0]
    seq for i in 1 .. N {{
      Y[b, i] = Y[b, i - 1] + X[b, i]
    }}
  }}
}}
"""
    return Case(
        f"cumsum ({rows}, {cols})",
        ir,
        {"X": _rand(rng, rows, cols)},
        lambda t: {"Y": torch.cumsum(t["X"], dim=1)},
    )


def lstm(rng: np.random.Generator, steps: int = 32, batch: int = 64, hidden: int = 256) -> Case:
    ir = f"""solar-ir 1
program lstm
size T = {steps}
size B = {batch}
size I = {hidden}
size Hd = {hidden}
input X : f32[T, B, I]
input h0 : f32[B, Hd]
input c0 : f32[B, Hd]
param Wih : f32[4 * Hd, I]
param Whh : f32[4 * Hd, Hd]
param bih : f32[4 * Hd]
param bhh : f32[4 * Hd]
output Y : f32[T, B, Hd]
output h : f32[B, Hd]
output c : f32[B, Hd]
kernel lstm {{
  local gates : f32[B, 4 * Hd]
  for b in 0 .. B {{
    for j in 0 .. Hd {{
      h[b, j] = h0[b, j]
      c[b, j] = c0[b, j]
    }}
  }}
  seq for t in 0 .. T {{
    for b in 0 .. B {{
      for g in 0 .. 4 * Hd {{
        gates[b, g] = bih[g] + bhh[g]
        for k in 0 .. I {{
          gates[b, g] += X[t, b, k] * Wih[g, k]
        }}
        for k in 0 .. Hd {{
          gates[b, g] += h[b, k] * Whh[g, k]
        }}
      }}
      for j in 0 .. Hd {{
        c[b, j] = sigmoid(gates[b, Hd + j]) * c[b, j]
                  + sigmoid(gates[b, j]) * tanh(gates[b, 2 * Hd + j])
        h[b, j] = sigmoid(gates[b, 3 * Hd + j]) * tanh(c[b, j])
        Y[t, b, j] = h[b, j]
      }}
    }}
  }}
}}
"""

    def torch_fn(t: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        h, c = t["h0"], t["c0"]
        ys = []
        for x in t["X"]:
            h, c = torch._VF.lstm_cell(x, (h, c), t["Wih"], t["Whh"], t["bih"], t["bhh"])
            ys.append(h)
        return {"Y": torch.stack(ys), "h": h, "c": c}

    return Case(
        f"lstm T{steps} B{batch} H{hidden}",
        ir,
        {
            "X": _rand(rng, steps, batch, hidden),
            "h0": _rand(rng, batch, hidden),
            "c0": _rand(rng, batch, hidden),
            "Wih": _rand(rng, 4 * hidden, hidden) * 0.1,
            "Whh": _rand(rng, 4 * hidden, hidden) * 0.1,
            "bih": _rand(rng, 4 * hidden),
            "bhh": _rand(rng, 4 * hidden),
        },
        torch_fn,
    )


def _from_module(name: str, model: str, sizes: str) -> Case:
    """A case whose IR is what the PyTorch frontend lowers ``model`` to (the program
    validation runs), with the module's own parameters and inputs; torch runs the
    module itself."""
    from solar.frontends.pytorch import lower_capture, trace_model_file
    from solar.frontends.pytorch.loader import instantiate

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.py"
        path.write_text(model)
        capture = trace_model_file(path)
        lowered = lower_capture(capture)
        inst = instantiate(capture.source)
    assert not lowered.coverage, lowered.coverage
    values = {lowered.inputs[k]: a.detach().numpy() for k, a in enumerate(inst.args)}
    values |= {ir: inst.state[key].detach().numpy() for key, ir in lowered.params}
    out = lowered.outputs[0]
    assert out is not None
    return Case(
        f"{name} {sizes}",
        print_program(lowered.program),
        {k: v for k, v in values.items() if k is not None},
        lambda _t: {out: inst.fn(*inst.args)},
    )


_MODULE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = {module}

    def forward(self, x):
        {forward}


def get_inputs():
    return [torch.randn({shape})]


def get_init_inputs():
    return []
"""


def conv_transpose3d(_rng: np.random.Generator) -> Case:
    """KernelBench-style 3-D transposed convolution (stride 2)."""
    model = _MODULE.format(
        module="nn.ConvTranspose3d(16, 32, 3, stride=2, padding=1, output_padding=1)",
        forward="return self.m(x)",
        shape="4, 16, 16, 32, 32",
    )
    return _from_module("conv_transpose3d", model, "4x16->32 16x32x32 k3 s2")


def depthwise_module(_rng: np.random.Generator) -> Case:
    """Depthwise 3x3 convolution as nn.Conv2d(groups=C) lowers it."""
    model = _MODULE.format(
        module="nn.Conv2d(128, 128, 3, padding=1, groups=128)",
        forward="return self.m(x)",
        shape="8, 128, 56, 56",
    )
    return _from_module("depthwise (nn)", model, "8x128 56^2")


def layernorm_module(_rng: np.random.Generator) -> Case:
    """nn.LayerNorm as the frontend lowers it (mean, variance, normalise, affine)."""
    model = _MODULE.format(
        module="nn.LayerNorm(1024)", forward="return self.m(x)", shape="16, 256, 1024"
    )
    return _from_module("layernorm (nn)", model, "4096x1024")


def gru_module(_rng: np.random.Generator) -> Case:
    """A 2-layer bidirectional nn.GRU: one whole-sequence kernel (a scan over time)."""
    model = _MODULE.format(
        module="nn.GRU(128, 256, 2, bidirectional=True)",
        forward="return self.m(x)[0]",
        shape="64, 10, 128",
    )
    return _from_module("gru (nn)", model, "T64 B10 128->2x256 2 layers")


def cumsum_module(_rng: np.random.Generator) -> Case:
    """torch.cumsum along the last dim as the frontend lowers it (a scan)."""
    model = _MODULE.format(
        module="nn.Identity()", forward="return torch.cumsum(x, 1)", shape="128, 4000"
    )
    return _from_module("cumsum (nn)", model, "128x4000")


CASES: dict[str, Callable[[np.random.Generator], Case]] = {
    "matmul": matmul,
    "conv2d": conv2d,
    "depthwise": depthwise,
    "maxpool": maxpool,
    "softmax": softmax,
    "layernorm": layernorm,
    "attention": attention,
    "cumsum": cumsum,
    "lstm": lstm,
    "conv_transpose3d": conv_transpose3d,
    "depthwise_nn": depthwise_module,
    "layernorm_nn": layernorm_module,
    "gru_nn": gru_module,
    "cumsum_nn": cumsum_module,
}


def _interleaved(
    first: Callable[[], object], second: Callable[[], object], repeat: int, min_time_s: float
) -> tuple[float, float]:
    """Best-of wall times of two functions, run alternately (A B A B ...).

    Alternating exposes both to the same background load; the minimum over at least
    ``repeat`` rounds (more for fast cases, up to ``min_time_s`` of wall time) is the
    least disturbed run of each.
    """
    first()
    second()
    best_a = best_b = math.inf
    rounds = 0
    start = time.perf_counter()
    while rounds < repeat or (time.perf_counter() - start < min_time_s and rounds < 50 * repeat):
        t0 = time.perf_counter()
        first()
        t1 = time.perf_counter()
        second()
        t2 = time.perf_counter()
        best_a, best_b = min(best_a, t1 - t0), min(best_b, t2 - t1)
        rounds += 1
    return best_a, best_b


_BUDGET = 4 << 30
"""The cases run at the issue's sizes, above validation's default share (512 MiB of the
1 GiB validation memory): the benchmark measures speed, not the budget."""


def run_case(case: Case, repeat: int, min_time_s: float) -> tuple[float, float, float]:
    """Time one case; returns (executor s, torch s, max relative difference)."""
    program = parse_program(case.ir, filename=case.name)
    tensors = {k: torch.from_numpy(v) for k, v in case.inputs.items()}
    ours = execute_program(program, case.inputs, memory_budget_bytes=_BUDGET)
    with torch.no_grad():
        ref = case.torch_fn(tensors)
        diff = max(
            float(
                np.max(np.abs(ours[k] - ref[k].numpy())) / (np.max(np.abs(ref[k].numpy())) + 1e-30)
            )
            for k in ref
        )
        t_exec, t_torch = _interleaved(
            lambda: execute_program(program, case.inputs, memory_budget_bytes=_BUDGET),
            lambda: case.torch_fn(tensors),
            repeat,
            min_time_s,
        )
    return t_exec, t_torch, diff


def main() -> None:
    """Run the benchmark table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="minimum rounds per case")
    parser.add_argument(
        "--min-time", type=float, default=2.0, help="keep alternating up to this many seconds"
    )
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    ratios = []
    print(
        f"{'case':36s} {'executor ms':>12s} {'torch ms':>10s} {'ratio':>7s} {'max rel diff':>13s}"
    )
    for key, make in CASES.items():
        if args.only and key not in args.only:
            continue
        case = make(rng)
        t_exec, t_torch, diff = run_case(case, args.repeat, args.min_time)
        ratio = t_exec / t_torch
        ratios.append(ratio)
        print(
            f"{case.name:36s} {t_exec * 1e3:12.2f} {t_torch * 1e3:10.2f} {ratio:7.2f} {diff:13.2e}"
        )
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"{'geometric mean ratio':36s} {'':12s} {'':10s} {geo:7.2f}")
    print(f"{'max ratio':36s} {'':12s} {'':10s} {max(ratios):7.2f}")


if __name__ == "__main__":
    main()
