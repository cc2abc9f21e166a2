"""Sound per-rank costs of collectives: the minimum bytes any algorithm must move.

Contract: ``(Collective, GroupPlacement, ClusterSpec) -> tuple[LinkCharge, ...]``, pure
and doctested. Each charge is a LOWER bound on the time the collective keeps one
resource of one rank busy (docs/distributed.md derives each formula):

* ``injection``: all of a GPU's links together (scale-up fabric plus its NICs), one
  direction. Every collective charges its minimum per-rank bytes here.
* ``scale-out``: a rank's share of its scale-up domain's NICs. A group that spans
  N_d domains with k members in each charges the bytes that must cross the domain
  boundary, divided among the k members' NICs (Note [Cuts]).

Minimum bytes per rank, for a group of n ranks and a buffer of S bytes (Patarasuk &
Yuan 2009; nccl-tests doc/PERFORMANCE.md), sent and received (Note [Directions]):

=============== ================================ ===============================
op              S is                             bytes per rank (sent, received)
=============== ================================ ===============================
all_reduce      the buffer                       2(n-1)/n S each; S each in-network
all_gather      the gathered output              (n-1)/n S each; S/n sent in-network
reduce_scatter  the input                        (n-1)/n S each; S/n received in-network
all_to_all      what one rank holds (uniform)    (n-1)/n S each
send_recv       the message                      S each (a stage sends and receives one)
broadcast       the buffer                       (n-1)/n S each; S/n sent in-network
=============== ================================ ===============================

Note [Directions]: every link is full duplex, so a rank's sends and receives load
different directions: a resource's busy time is the larger of its summed sent and its
summed received bytes over the bandwidth of one direction (`direction_bytes`). Where
the fabric reduces in the switch (NVLS, SHARP) and multicasts, a reduce-scatter must
send each rank's contributions to the other shards ((n-1)/n S) but receive only its own
reduced shard (S/n), an all-gather the reverse; charging each at its larger direction
and adding them would count 2(n-1)/n S for a reduce-scatter plus an all-gather where
S each way suffices. Every figure is the group's average per rank (for a broadcast the
n-1 receivers' S over n ranks; without in-network work the bytes sent equal the bytes
received), or a minimum that holds on every rank; a sum of averages is the average of
the sums, at most the busiest rank's, so adding them per direction stays a lower bound
(two broadcasts from different roots included).

Per-hop latency is zero in the bound; `alpha_estimate_s` adds it for a labelled
*estimate* only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from solar.hw.cluster import ClusterSpec

__all__ = [
    "COLLECTIVE_OPS",
    "Collective",
    "CollectiveOp",
    "GroupPlacement",
    "LinkCharge",
    "Resource",
    "alpha_estimate_s",
    "charge_collective",
    "cut_bytes",
    "cut_direction_bytes",
    "direction_bytes",
    "min_bytes_per_rank",
    "place_group",
    "place_groups",
]

CollectiveOp: TypeAlias = Literal[
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast"
]
COLLECTIVE_OPS: Final[tuple[CollectiveOp, ...]] = (
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast"
)
Resource: TypeAlias = Literal["injection", "scale-out"]


@dataclass(frozen=True, slots=True)
class Collective:
    """One collective a rank takes part in, ``count`` times per step.

    Attributes:
        op: the collective.
        group_size: ranks in its group (n).
        bytes: S, the buffer as the table of the module docstring defines it.
        dtype: the element type, in words (``bf16``).
        axis: the plan axis of its group (``tp``, ``dp``, ``pp``, ``ep``, ``cp``).
        phase: the step phase it belongs to (``forward``, ``backward``, ``optimizer``).
        count: how many times per step each rank runs it.
        what: what it moves, in words.
        in_bound: False for a row shown for information only (e.g. an all-to-all
            whose bytes depend on routing the analysis does not know).
    """

    op: CollectiveOp
    group_size: int
    bytes: float
    dtype: str
    axis: str
    phase: str
    count: float = 1.0
    what: str = ""
    in_bound: bool = True


@dataclass(frozen=True, slots=True)
class GroupPlacement:
    """How a group of ranks sits on the scale-up domains.

    Attributes:
        domains: N_d, the scale-up domains the group spans.
        per_domain: k, the group's members in each domain.
    """

    domains: int
    per_domain: int


@dataclass(frozen=True, slots=True)
class LinkCharge:
    """A lower bound on the time one collective keeps one resource of a rank busy:
    ``bytes`` (the larger direction) over one direction's bandwidth is ``time_s``;
    ``sent_s`` and ``received_s`` are each direction's share (Note [Directions])."""

    resource: Resource
    link: str
    bytes: float
    time_s: float
    sent_s: float = 0.0
    received_s: float = 0.0


def place_group(group_size: int, stride: int, domain_size: int) -> GroupPlacement:
    """Where a group of ``group_size`` ranks ``stride`` apart falls on domains of
    ``domain_size`` consecutive ranks.

    >>> place_group(8, 1, 8)      # TP=8 inside a DGX
    GroupPlacement(domains=1, per_domain=8)
    >>> place_group(16, 8, 8)     # DP=16 across 16 nodes, TP=8 inner
    GroupPlacement(domains=16, per_domain=1)
    >>> place_group(4, 2, 8)      # 4 ranks 2 apart: one domain
    GroupPlacement(domains=1, per_domain=4)
    >>> place_group(8, 2, 8)      # 8 ranks 2 apart: two domains of 4
    GroupPlacement(domains=2, per_domain=4)
    >>> place_group(4, 3, 8)      # 0, 3, 6 share a domain: at most ceil(8 / 3) per domain
    GroupPlacement(domains=2, per_domain=3)

    Where the stride does not divide the domain, the members per domain are rounded up
    and the domains down: a larger share per domain and fewer cuts only lower the bound.
    """
    if group_size <= 1:
        return GroupPlacement(1, max(group_size, 1))
    per_domain = max(1, min(group_size, -(-domain_size // max(stride, 1))))
    domains = -(-group_size // per_domain)
    return GroupPlacement(domains, per_domain)


def direction_bytes(
    op: CollectiveOp, group_size: int, size_bytes: float, *, in_network: bool = False
) -> tuple[float, float]:
    """The fewest bytes one rank must send and receive (Note [Directions]).

    >>> direction_bytes("reduce_scatter", 4, 400.0, in_network=True)
    (300.0, 100.0)
    >>> direction_bytes("all_gather", 4, 400.0, in_network=True)
    (100.0, 300.0)
    >>> direction_bytes("broadcast", 4, 400.0)
    (300.0, 300.0)
    """
    n = group_size
    if n <= 1 or size_bytes <= 0:
        return 0.0, 0.0
    share = (n - 1) / n * size_bytes
    match op:
        case "all_reduce":
            both = float(size_bytes) if in_network else 2.0 * share
            return both, both
        case "all_gather" | "broadcast":
            return (size_bytes / n if in_network else share), share
        case "reduce_scatter":
            return share, (size_bytes / n if in_network else share)
        case "all_to_all":
            return share, share
        case "send_recv":
            return float(size_bytes), float(size_bytes)


def min_bytes_per_rank(
    op: CollectiveOp, group_size: int, size_bytes: float, *, in_network: bool = False
) -> float:
    """The fewest bytes one rank must move in its busier direction.

    >>> min_bytes_per_rank("all_reduce", 8, 800.0)
    1400.0
    >>> min_bytes_per_rank("all_reduce", 8, 800.0, in_network=True)
    800.0
    >>> min_bytes_per_rank("all_gather", 4, 400.0), min_bytes_per_rank("send_recv", 2, 5.0)
    (300.0, 5.0)
    >>> min_bytes_per_rank("all_reduce", 1, 800.0)
    0.0
    """
    return max(direction_bytes(op, group_size, size_bytes, in_network=in_network))


def cut_direction_bytes(
    op: CollectiveOp, placement: GroupPlacement, size_bytes: float, *, in_network: bool = False
) -> tuple[float, float]:
    """Bytes that must leave and enter one domain, per member of the group in it
    (Note [Cuts]): the domain is one super-node of the formula, its k members share it.

    >>> cut_direction_bytes("all_gather", GroupPlacement(4, 2), 800.0, in_network=True)
    (100.0, 300.0)
    """
    nd, k = placement.domains, placement.per_domain
    if nd <= 1 or size_bytes <= 0:
        return 0.0, 0.0
    match op:
        case "all_reduce" | "all_gather" | "reduce_scatter" | "broadcast":
            sent, received = direction_bytes(op, nd, size_bytes, in_network=in_network)
            return sent / k, received / k
        case "all_to_all":
            n = nd * k
            return (n - k) / n * size_bytes, (n - k) / n * size_bytes
        case "send_recv":
            return float(size_bytes), float(size_bytes)


def cut_bytes(
    op: CollectiveOp, placement: GroupPlacement, size_bytes: float, *, in_network: bool = False
) -> float:
    """Bytes that must cross one domain's boundary in the busier direction, per member
    of the group in it (`cut_direction_bytes`).

    >>> cut_bytes("all_reduce", GroupPlacement(16, 1), 1600.0)   # DP over 16 nodes
    3000.0
    >>> cut_bytes("all_reduce", GroupPlacement(2, 4), 800.0)      # 2 domains, 4 each
    200.0
    >>> cut_bytes("all_to_all", GroupPlacement(2, 4), 800.0)      # half the peers remote
    400.0
    >>> cut_bytes("all_gather", GroupPlacement(1, 8), 800.0)      # inside one domain
    0.0
    """
    return max(cut_direction_bytes(op, placement, size_bytes, in_network=in_network))


def place_groups(groups: tuple[tuple[int, ...], ...], domain_size: int) -> GroupPlacement:
    """Where explicit groups of global ranks (a captured program's) fall on domains of
    ``domain_size`` consecutive ranks: the most domains any group spans, and the most
    members any group has in one domain (fewer, larger shares: a lower bound).

    >>> place_groups(((0, 1, 2, 3), (4, 5, 6, 7)), 8)
    GroupPlacement(domains=1, per_domain=4)
    >>> place_groups(((0, 8), (1, 9)), 8)
    GroupPlacement(domains=2, per_domain=1)
    """
    domains, per = 1, 1
    for g in groups:
        counts: dict[int, int] = {}
        for r in g:
            counts[r // domain_size] = counts.get(r // domain_size, 0) + 1
        domains = max(domains, len(counts))
        per = max(per, max(counts.values(), default=1))
    return GroupPlacement(domains, per)


def charge_collective(
    coll: Collective, stride: int | GroupPlacement, cluster: ClusterSpec
) -> tuple[LinkCharge, ...]:
    """The per-rank resource charges of one run of ``coll`` on ``cluster``.

    Args:
        coll: the collective.
        stride: distance in global rank between consecutive members of its group
            (ranks are numbered tp fastest, then cp, dp, pp), or the group's placement
            when its ranks are known (`place_groups`).
        cluster: the system.

    Returns:
        One `LinkCharge` per resource it loads (none for a group of one).
    """
    up = cluster.scale_up
    placement = (stride if isinstance(stride, GroupPlacement)
                 else place_group(coll.group_size, stride, up.domain_size))
    nic = cluster.nic_bandwidth_per_gpu_bytes_per_s
    spans = placement.domains > 1
    reduces = up.in_network_reduction and (
        not spans or (cluster.scale_out is not None and cluster.scale_out.in_network_reduction)
    )
    charges: list[LinkCharge] = []
    sent, received = direction_bytes(coll.op, coll.group_size, coll.bytes, in_network=reduces)
    if max(sent, received) > 0:
        bw = up.bandwidth_per_direction_bytes_per_s + nic
        charges.append(_charge("injection", f"{up.fabric} + NICs", sent, received, bw))
    if spans and cluster.scale_out is not None and nic > 0:
        out_reduces = cluster.scale_out.in_network_reduction
        sent, received = cut_direction_bytes(coll.op, placement, coll.bytes,
                                             in_network=out_reduces)
        if max(sent, received) > 0:
            charges.append(_charge("scale-out", cluster.scale_out.network, sent, received,
                                   nic))
    return tuple(charges)


def _charge(resource: Resource, link: str, sent: float, received: float,
            bw: float) -> LinkCharge:
    most = max(sent, received)
    return LinkCharge(resource, link, most, most / bw, sent / bw, received / bw)


def alpha_estimate_s(coll: Collective, stride: int | GroupPlacement,
                     cluster: ClusterSpec) -> float:
    """An alpha-beta *estimate* (not a bound) of one run: the slowest charge plus
    the per-hop latencies of a ring (2(n-1) hops for an all-reduce, n-1 for the
    others, 1 for a send).

    >>> from solar.hw.cluster_loader import load_cluster_spec
    >>> c = Collective("all_reduce", 8, 1e9, "bf16", "tp", "forward")
    >>> round(alpha_estimate_s(c, 1, load_cluster_spec("DGX_H100")) * 1e3, 3)
    2.028
    """
    charges = charge_collective(coll, stride, cluster)
    beta = max((c.time_s for c in charges), default=0.0)
    n = coll.group_size
    hops = {"all_reduce": 2 * (n - 1), "send_recv": 1}.get(coll.op, n - 1)
    placement = (stride if isinstance(stride, GroupPlacement)
                 else place_group(n, stride, cluster.scale_up.domain_size))
    out = cluster.scale_out
    alpha = (
        out.latency_s if placement.domains > 1 and out is not None and out.latency_s
        else cluster.scale_up.latency_s or 0.0
    )
    return beta + hops * alpha if n > 1 else 0.0
