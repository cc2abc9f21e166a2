"""The collective cost formulas: the table, placement on domains, and their properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.distributed import (
    COLLECTIVE_OPS,
    Collective,
    GroupPlacement,
    charge_collective,
    cut_bytes,
    direction_bytes,
    min_bytes_per_rank,
    place_group,
)
from solar.hw.cluster_loader import load_cluster_spec

# (op, n, S, in_network) -> minimum bytes per rank, one direction
TABLE = [
    ("all_reduce", 8, 1000.0, False, 1750.0),  # 2(n-1)/n S
    ("all_reduce", 2, 1000.0, False, 1000.0),
    ("all_reduce", 8, 1000.0, True, 1000.0),   # in-network: S out, S in
    ("all_gather", 8, 1000.0, False, 875.0),   # (n-1)/n S
    ("reduce_scatter", 4, 1000.0, False, 750.0),
    ("reduce_scatter", 4, 1000.0, True, 750.0),  # the switch does not shrink a scatter
    ("all_to_all", 4, 1000.0, False, 750.0),
    ("send_recv", 2, 1000.0, False, 1000.0),
    ("broadcast", 8, 1000.0, False, 875.0),   # the 7 receivers' S over 8 ranks
    ("all_reduce", 1, 1000.0, False, 0.0),     # a group of one moves nothing
]


@pytest.mark.parametrize(("op", "n", "size", "innet", "expected"), TABLE)
def test_minimum_bytes_table(op: str, n: int, size: float, innet: bool, expected: float) -> None:
    assert min_bytes_per_rank(op, n, size, in_network=innet) == pytest.approx(expected)  # type: ignore[arg-type]


PLACEMENTS = [
    (8, 1, 8, GroupPlacement(1, 8)),     # TP=8 inside one DGX
    (16, 8, 8, GroupPlacement(16, 1)),   # DP across nodes
    (8, 2, 8, GroupPlacement(2, 4)),     # dp=8 with tp=2: two nodes, four each
    (72, 1, 72, GroupPlacement(1, 72)),  # an NVL72 rack
    (1, 1, 8, GroupPlacement(1, 1)),
]


@pytest.mark.parametrize(("n", "stride", "domain", "expected"), PLACEMENTS)
def test_placement(n: int, stride: int, domain: int, expected: GroupPlacement) -> None:
    assert place_group(n, stride, domain) == expected


def test_inter_node_all_reduce_is_charged_to_the_nics() -> None:
    dgx = load_cluster_spec("DGX_H100")
    c = Collective("all_reduce", 16, 1e9, "bf16", "dp", "backward")
    charges = {ch.resource: ch for ch in charge_collective(c, 8, dgx)}
    # node cut: 2(16-1)/16 of 1 GB per node, one member per node, over one 50 GB/s NIC
    assert charges["scale-out"].bytes == pytest.approx(2 * 15 / 16 * 1e9)
    assert charges["scale-out"].time_s == pytest.approx(2 * 15 / 16 * 1e9 / 50e9)
    # injection: every link of the GPU, NVLink + NIC
    assert charges["injection"].time_s == pytest.approx(2 * 15 / 16 * 1e9 / 500e9)


def test_in_node_all_reduce_uses_nvls_only_inside_the_domain() -> None:
    dgx, a100 = load_cluster_spec("DGX_H100"), load_cluster_spec("DGX_A100")
    c = Collective("all_reduce", 8, 1e9, "bf16", "tp", "forward")
    (h,) = charge_collective(c, 1, dgx)
    (a,) = charge_collective(c, 1, a100)
    assert h.bytes == pytest.approx(1e9)               # NVSwitch 3 reduces in the switch
    assert a.bytes == pytest.approx(2 * 7 / 8 * 1e9)   # NVSwitch 2 does not
    assert h.time_s == pytest.approx(1e9 / 500e9)
    assert a.time_s == pytest.approx(2 * 7 / 8 * 1e9 / 325e9)


def test_cut_of_a_group_inside_one_domain_is_zero() -> None:
    assert cut_bytes("all_reduce", GroupPlacement(1, 8), 1e9) == 0.0


ops = st.sampled_from(COLLECTIVE_OPS)
sizes = st.floats(min_value=1.0, max_value=1e12, allow_nan=False, allow_infinity=False)
groups = st.integers(min_value=1, max_value=4096)
strides = st.sampled_from([1, 2, 4, 8, 16, 64])


def _scaled(bandwidth_factor: float) -> object:
    base = load_cluster_spec("DGX_H100")
    up = base.scale_up.model_copy(update={
        "bandwidth_per_direction_bytes_per_s":
            base.scale_up.bandwidth_per_direction_bytes_per_s * bandwidth_factor})
    assert base.scale_out is not None
    out = base.scale_out.model_copy(update={
        "bandwidth_per_direction_bytes_per_s":
            base.scale_out.bandwidth_per_direction_bytes_per_s * bandwidth_factor})
    return base.model_copy(update={"scale_up": up, "scale_out": out})


@given(op=ops, n=groups, size=sizes, stride=strides,
       factor=st.floats(min_value=1.0, max_value=100.0))
def test_bound_never_increases_with_bandwidth(
    op: str, n: int, size: float, stride: int, factor: float
) -> None:
    c = Collective(op, n, size, "bf16", "dp", "backward")  # type: ignore[arg-type]
    slow = {ch.resource: ch.time_s for ch in charge_collective(c, stride, _scaled(1.0))}  # type: ignore[arg-type]
    fast = {ch.resource: ch.time_s for ch in charge_collective(c, stride, _scaled(factor))}  # type: ignore[arg-type]
    assert slow.keys() == fast.keys()
    for resource, t in fast.items():
        assert t <= slow[resource] * (1 + 1e-12)


@given(op=ops, n=groups, small=sizes, extra=sizes, stride=strides)
def test_bound_is_monotone_in_bytes(op: str, n: int, small: float, extra: float,
                                    stride: int) -> None:
    dgx = load_cluster_spec("DGX_H100")
    a = {ch.resource: ch.time_s for ch in charge_collective(
        Collective(op, n, small, "bf16", "dp", "x"), stride, dgx)}  # type: ignore[arg-type]
    b = {ch.resource: ch.time_s for ch in charge_collective(
        Collective(op, n, small + extra, "bf16", "dp", "x"), stride, dgx)}  # type: ignore[arg-type]
    for resource, t in a.items():
        assert b[resource] >= t


@given(op=ops, n=st.integers(min_value=2, max_value=4096), size=sizes)
def test_in_network_never_charges_more(op: str, n: int, size: float) -> None:
    assert min_bytes_per_rank(op, n, size, in_network=True) <= min_bytes_per_rank(  # type: ignore[arg-type]
        op, n, size)  # type: ignore[arg-type]


# (op, n, S, in_network) -> (sent, received) per rank (Note [Directions])
DIRECTIONS = [
    ("reduce_scatter", 4, 1000.0, True, (750.0, 250.0)),   # own shard only comes back
    ("all_gather", 4, 1000.0, True, (250.0, 750.0)),       # own shard leaves once
    ("reduce_scatter", 4, 1000.0, False, (750.0, 750.0)),  # sent = received without
    ("all_gather", 4, 1000.0, False, (750.0, 750.0)),      # in-network work
    ("broadcast", 4, 1000.0, True, (250.0, 750.0)),
    ("send_recv", 2, 1000.0, False, (1000.0, 1000.0)),
]


@pytest.mark.parametrize(("op", "n", "size", "innet", "expected"), DIRECTIONS)
def test_sent_and_received_bytes(op: str, n: int, size: float, innet: bool,
                                 expected: tuple[float, float]) -> None:
    assert direction_bytes(op, n, size, in_network=innet) == pytest.approx(expected)  # type: ignore[arg-type]


def test_nvls_reduce_scatter_and_all_gather_add_per_direction() -> None:
    """ZeRO's reduce-scatter plus all-gather on NVSwitch 3 (NVLS): each rank sends its
    contributions and its updated shard, S in all, and receives as much; adding each
    op's busier direction would charge 2(n-1)/n S = 1.5 S for n = 4."""
    dgx = load_cluster_spec("DGX_H100")
    rs = Collective("reduce_scatter", 4, 1e9, "bf16", "dp", "backward")
    ag = Collective("all_gather", 4, 1e9, "bf16", "dp", "optimizer")
    (a,), (b,) = charge_collective(rs, 1, dgx), charge_collective(ag, 1, dgx)
    sent, received = a.sent_s + b.sent_s, a.received_s + b.received_s
    assert max(sent, received) == pytest.approx(1e9 / 500e9)
    assert a.time_s + b.time_s == pytest.approx(1.5e9 / 500e9)  # the old, too high sum


@given(op=ops, n=groups, size=sizes, innet=st.booleans())
def test_busier_direction_is_the_minimum_bytes(op: str, n: int, size: float,
                                               innet: bool) -> None:
    sent, received = direction_bytes(op, n, size, in_network=innet)  # type: ignore[arg-type]
    assert max(sent, received) == min_bytes_per_rank(op, n, size, in_network=innet)  # type: ignore[arg-type]
    assert min(sent, received) >= 0.0
