"""Mixture-of-experts load: the expert phase under static, lagged-adaptive and oracle
placement, and the all-to-all bytes, from tokens per expert per step and layer.

Contract: ``--moe-load`` text or file -> `ExpertLoad` (`load_expert_load`,
`synthetic_load`), and ``(ExpertLoad, MoeSetup) -> MoeBound`` (`bound_moe`), pure.

Note [Expert placement bounds] (docs/distributed.md): an EP group of ``G`` GPUs holds
``E`` experts, ``s = E / G`` slots per GPU; expert ``e`` gets ``c_e`` tokens in a step
and layer (the sum ``T`` is top-k times the tokens). A GPU's expert compute is at least
its tokens x ``3 phi`` (forward + input gradient + weight gradient; ``phi`` = 2 x one
expert's parameters, FLOPs per token) over the peak.

* static (expert ``e`` on GPU ``e // s``): load ``max_g sum_{e on g} c_e``;
* with ``r_e >= 1`` replicas (``sum r_e <= G s``) a replica of ``e`` takes at least
  ``c_e / r_e`` and some GPU at least ``T / G``; the least such max over replica counts,
  ``max(T / G, min_r max_e c_e / r_e)``, is attained by giving each further slot to the
  expert with the largest ``c_e / r_e`` (the greedy is optimal for this min-max);
* oracle: those replica counts chosen from the same step's load;
* lagged (what SYMI-like systems realise): counts chosen from the previous step's load,
  applied to this step (``max(T / G, max_e c_e / r_e)``), plus moving the parameters:
  every replica away from its expert's static owner (optimizer state stays statically
  sharded) receives the updated weights and sends its gradients back, at least
  ``sum_e (r_e - 1)`` expert parameter sets each way over the group's links.

All-to-all (dispatch and combine, forward and backward: 4 per layer) of GPU ``g``: its
experts receive ``L_g`` tokens, of which at most ``T / G`` can come from ``g`` itself (a
GPU holds ``N / G`` tokens, each routed to at most ``k`` experts), so
``in_g >= max(0, L_g - T / G)`` tokens x hidden x bytes. A node's cut likewise, divided
by the experts on the node (one copy per target node where the dispatcher de-duplicates).
"""

from __future__ import annotations

import csv
import heapq
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solar.diagnostics import PlanError
from solar.files import open_input

__all__ = ["ExpertLoad", "MoeBound", "MoeSetup", "bound_moe", "load_expert_load",
           "replica_counts", "synthetic_load"]

MAX_LOAD_BYTES = 64 << 20
MAX_LOAD_CELLS = 1 << 24
"""The most loads (steps x layers x experts) a ``.csv`` may declare by its indices: the
array is allocated from them, so ``step=10**9`` would take 8 GB."""


@dataclass(frozen=True, slots=True)
class ExpertLoad:
    """Tokens per expert: ``counts[step][layer][expert]`` (integers >= 0)."""

    counts: tuple[tuple[tuple[int, ...], ...], ...]
    source: str

    @property
    def experts(self) -> int:
        """E."""
        return len(self.counts[0][0])


def _checked(arr: np.ndarray, source: str) -> ExpertLoad:
    if arr.ndim == 4:  # [step][layer][src][expert]: the per-source matrix, summed
        arr = arr.sum(axis=2)
    if arr.ndim == 2:
        arr = arr[:, None, :]
    if arr.ndim != 3 or 0 in arr.shape:
        raise PlanError(f"{source}: expert loads need shape [steps][layers][experts] (or "
                        f"[steps][layers][ranks][experts]), got {list(arr.shape)}", code="E0810")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.round(arr)):
        raise PlanError(f"{source}: expert loads must be non-negative integers (tokens)",
                        code="E0810")
    return ExpertLoad(tuple(tuple(tuple(int(x) for x in layer) for layer in step)
                            for step in arr), source)


def load_expert_load(path: Path) -> ExpertLoad:
    """Read ``.npz`` (array ``counts``, or the only array) or ``.csv`` (columns
    ``step,layer,expert,tokens``).

    Raises:
        PlanError: E0810 a malformed load.
        UsageError: the file cannot be read.
    """
    with open_input(path, max_bytes=MAX_LOAD_BYTES) as fh:
        data = fh.read(MAX_LOAD_BYTES + 1)
    if path.suffix == ".npz":
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                names = list(z.files)
                key = "counts" if "counts" in names else names[0] if len(names) == 1 else None
                if key is None:
                    raise PlanError(f"{path}: name the array `counts`", code="E0810")
                return _checked(np.asarray(z[key], dtype=float), str(path))
        except (ValueError, OSError) as err:
            raise PlanError(f"{path}: not a readable .npz ({err})", code="E0810") from None
    rows: dict[tuple[int, int, int], float] = {}
    try:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8")))
        for row in reader:
            rows[int(row["step"]), int(row["layer"]), int(row["expert"])] = float(row["tokens"])
    except (KeyError, ValueError, TypeError, UnicodeDecodeError) as err:
        raise PlanError(f"{path}: a CSV with columns step,layer,expert,tokens ({err})",
                        code="E0810") from None
    if not rows:
        raise PlanError(f"{path}: no expert loads", code="E0810")
    if min(min(k) for k in rows) < 0:
        raise PlanError(f"{path}: a negative step, layer or expert index", code="E0810")
    shape = tuple(max(k[i] for k in rows) + 1 for i in range(3))
    if math.prod(shape) > MAX_LOAD_CELLS:  # checked before the array is allocated
        raise PlanError(f"{path}: indices up to {shape} declare {math.prod(shape):,} loads, "
                        f"over the limit of {MAX_LOAD_CELLS:,}", code="E0810")
    arr = np.zeros(shape)
    for (s, layer, e), v in rows.items():
        arr[s, layer, e] = v
    return _checked(arr, str(path))


_SYNTH = re.compile(r"^(uniform|zipf:(\d+(?:\.\d+)?))$")


def synthetic_load(text: str, *, experts: int, layers: int, tokens: int, steps: int = 8,
                   seed: int = 0) -> ExpertLoad:
    """``uniform`` or ``zipf:ALPHA``: ``tokens`` routed tokens per step and layer
    (top-k times the tokens), integer loads by largest remainder; the Zipf ranking of
    the experts is re-drawn every step and layer (seeded), as routers drift.

    Raises:
        PlanError: E0804 an unknown spelling.
    """
    m = _SYNTH.match(text.strip())
    if m is None:
        raise PlanError(f"bad --moe-load `{text}`", code="E0804",
                        notes=("a .npz or .csv file, `uniform`, or `zipf:ALPHA`",))
    rng = np.random.default_rng(seed)
    alpha = float(m.group(2)) if m.group(2) else 0.0
    weights = 1.0 / np.arange(1, experts + 1) ** alpha
    out = []
    for _ in range(steps):
        step = []
        for _ in range(layers):
            share = rng.permutation(weights / weights.sum()) * tokens
            base = np.floor(share)
            rest = int(tokens - base.sum())
            base[np.argsort(base - share)[:rest]] += 1
            step.append(tuple(int(x) for x in base))
        out.append(tuple(step))
    return ExpertLoad(tuple(out), text)


@dataclass(frozen=True, slots=True)
class MoeSetup:
    """What the bound needs about the model and plan.

    Attributes:
        group: GPUs in the EP group (G).
        experts: experts per MoE layer (E), when the model shows it.
        flops_per_token: one expert's forward FLOPs per token (phi).
        expert_bytes: one expert's parameter bytes.
        token_bytes: hidden x bytes per element (one token's activation).
        peak_flops_per_s: a GPU's peak for the expert GEMMs.
        link_bytes_per_s: a GPU's injection bandwidth (all its links, one direction).
        node_gpus: GPUs of the group per node (for the node cut).
        nic_bytes_per_s: a node's scale-out bandwidth (all its NICs, one direction).
        slots: expert slots per GPU for the adaptive placements (``None``: E / G, no
            spare memory; more slots allow replicas).
    """

    group: int
    experts: int | None
    flops_per_token: float
    expert_bytes: float
    token_bytes: float
    peak_flops_per_s: float
    link_bytes_per_s: float
    node_gpus: int
    nic_bytes_per_s: float
    slots: int | None = None


@dataclass(frozen=True, slots=True)
class MoeBound:
    """Per step (summed over layers): the expert phase's bound under each placement.

    Attributes:
        static_s, lagged_s, oracle_s: per step.
        balanced_s: per step, with perfectly even loads (T / G per GPU).
        move_s: per step, the lagged placement's parameter movement.
        imbalance: per step and layer, static max GPU load / mean.
        a2a_bytes_per_rank: per step, the busiest GPU's all-to-all bytes (4 per layer).
        node_cut_bytes: per step, the busiest node's bytes in across the node boundary.
        a2a_s: per step, the all-to-all link time (injection and node cut, the larger).
    """

    static_s: tuple[float, ...]
    lagged_s: tuple[float, ...]
    oracle_s: tuple[float, ...]
    balanced_s: tuple[float, ...]
    move_s: tuple[float, ...]
    imbalance: tuple[tuple[float, ...], ...]
    a2a_bytes_per_rank: tuple[float, ...]
    node_cut_bytes: tuple[float, ...]
    a2a_s: tuple[float, ...]


def replica_counts(load: tuple[int, ...], slots: int) -> tuple[int, ...]:
    """Replicas per expert minimising ``max_e c_e / r_e`` with ``sum r_e = slots``
    (``slots >= E``): each further slot to the expert with the largest ``c_e / r_e``.

    >>> replica_counts((8, 1, 1, 2), 6)
    (3, 1, 1, 1)
    """
    r = [1] * len(load)
    heap: list[tuple[float, int]] = [(-float(c), e) for e, c in enumerate(load)]
    heapq.heapify(heap)
    for _ in range(slots - len(load)):
        _, e = heapq.heappop(heap)
        r[e] += 1
        heapq.heappush(heap, (-load[e] / r[e], e))
    return tuple(r)


def _max_share(load: tuple[int, ...], r: tuple[int, ...], group: int) -> float:
    return max(sum(load) / group, max((c / n for c, n in zip(load, r, strict=True)),
                                      default=0.0))


def bound_moe(load: ExpertLoad, setup: MoeSetup) -> MoeBound:
    """The expert phase per step (Note [Expert placement bounds]).

    Raises:
        PlanError: E0810 an expert count that does not match the model's or does not
            divide over the group.
    """
    e, g = load.experts, setup.group
    if setup.experts is not None and e != setup.experts:
        raise PlanError(f"{load.source}: {e} experts per layer; the model has "
                        f"{setup.experts}", code="E0810")
    if any(len(layer) != e for step in load.counts for layer in step):
        raise PlanError(f"{load.source}: every step and layer needs {e} experts", code="E0810")
    if e % g:
        raise PlanError(f"{e} experts do not divide over ep={g} GPUs", code="E0810")
    per = e // g
    slots = g * max(setup.slots or per, per)
    t_tok = 3.0 * setup.flops_per_token / setup.peak_flops_per_s
    nodes_gpus = max(1, min(setup.node_gpus, g))
    out: dict[str, list[float]] = {k: [] for k in ("static", "lagged", "oracle", "balanced",
                                                   "move", "a2a", "cut", "a2a_s")}
    imbalance: list[tuple[float, ...]] = []
    prev: list[tuple[int, ...]] | None = None
    for step in load.counts:
        acc = dict.fromkeys(out, 0.0)
        row = []
        counts: list[tuple[int, ...]] = []
        for li, layer in enumerate(step):
            total = sum(layer)
            gpu = [sum(layer[i * per:(i + 1) * per]) for i in range(g)]
            row.append(max(gpu) / (total / g) if total else 1.0)
            acc["static"] += max(gpu) * t_tok
            acc["balanced"] += total / g * t_tok
            r_now = replica_counts(layer, slots)
            acc["oracle"] += _max_share(layer, r_now, g) * t_tok
            r_prev = replica_counts(prev[li], slots) if prev else (1,) * e
            acc["lagged"] += _max_share(layer, r_prev, g) * t_tok
            moved = sum(r - 1 for r in r_prev) * setup.expert_bytes
            acc["move"] += 2.0 * moved / (g * setup.link_bytes_per_s)
            incoming = max(max(0.0, x - total / g) for x in gpu)
            acc["a2a"] += 4.0 * incoming * setup.token_bytes
            node_load = [sum(gpu[n:n + nodes_gpus]) for n in range(0, g, nodes_gpus)]
            cut = max(max(0.0, x - total * nodes_gpus / g) for x in node_load) / \
                (per * nodes_gpus) if g > nodes_gpus else 0.0
            acc["cut"] += 4.0 * cut * setup.token_bytes
            counts.append(layer)
        acc["a2a_s"] = max(acc["a2a"] / setup.link_bytes_per_s,
                           acc["cut"] / setup.nic_bytes_per_s if setup.nic_bytes_per_s else 0.0)
        acc["lagged"] = max(acc["lagged"], acc["move"])
        for k in out:
            out[k].append(acc[k])
        imbalance.append(tuple(row))
        prev = counts
    return MoeBound(
        static_s=tuple(out["static"]), lagged_s=tuple(out["lagged"]),
        oracle_s=tuple(out["oracle"]), balanced_s=tuple(out["balanced"]),
        move_s=tuple(out["move"]), imbalance=tuple(imbalance),
        a2a_bytes_per_rank=tuple(out["a2a"]), node_cut_bytes=tuple(out["cut"]),
        a2a_s=tuple(out["a2a_s"]),
    )
