"""Views, joins, indexing, scatters, pads and rearranging copies vs torch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.frontends.pytorch import trace_module
from solar.frontends.pytorch.ops_movement import reshape_map_const_last
from solar.ir import Name, print_expr

torch = pytest.importorskip("torch")
F = torch.nn.functional

from nn_opcheck import check_op  # noqa: E402
from strategies import shapes  # noqa: E402
from torch_check import check_program  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize(
    ("src", "dst", "expected"),
    [
        ((2, 3, 4), (6, 4), ["o0 // 3", "o0 % 3", "o1"]),
        ((6, 4), (2, 3, 4), ["o0 * 3 + o1", "o2"]),
        ((2, 1, 3), (3, 2), ["(o0 * 2 + o1) // 3", "0", "(o0 * 2 + o1) % 3"]),
        ((4, 1), (1, 4), ["o1", "0"]),
    ],
)
def test_reshape_map_groups_dims(
    src: tuple[int, ...], dst: tuple[int, ...], expected: list[str]
) -> None:
    idx = tuple(Name(f"o{k}") for k in range(len(dst)))
    assert [print_expr(e) for e in reshape_map_const_last(src, dst)(idx)] == expected


@settings(max_examples=15)
@given(shape=shapes(1, 4), data=st.data())
def test_any_reshape_of_any_permutation(shape: tuple[int, ...], data: st.DataObject) -> None:
    perm = data.draw(st.permutations(range(len(shape))))
    numel = 1
    for d in shape:
        numel *= d
    factors = [f for f in range(1, numel + 1) if numel % f == 0]
    first = data.draw(st.sampled_from(factors))
    check_program(lambda x: x.permute(*perm).reshape(first, -1) * 2, torch.randn(shape))


VIEWS = [
    lambda x: x.transpose(0, 2) + 1,
    lambda x: x.t() if x.dim() == 2 else x.mT + 1,
    lambda x: x[:, 1:3] * 2,
    lambda x: x[..., ::2] * 2,
    lambda x: x[:, -2:, 1::2] - 1,
    lambda x: x[1] + x[-1],
    lambda x: x[:, 0, None] * 3,
    lambda x: x.narrow(2, 1, 2) + 0,
    lambda x: x.unsqueeze(1).expand(2, 3, 3, 4).contiguous(),
    lambda x: x.expand(2, 2, 3, 4) * 1,
    lambda x: x.flatten() * 2,
    lambda x: x.view(-1, 4).T.contiguous(),
    lambda x: x.squeeze(0) + 0,
    lambda x: x.diagonal(1, 1, 2) * 2,
    lambda x: x.diagonal(-1, 0, 2) + 0,
    lambda x: x.unfold(2, 2, 1) * 2,
    lambda x: x.movedim(0, -1).contiguous(),
    lambda x: x.swapaxes(0, 1).reshape(3, 8) + 1,
    lambda x: x.unbind(1)[2] * 2,
    lambda x: x.split(1, 1)[1] + x.chunk(3, 1)[0],
    lambda x: x.tensor_split(2, dim=2)[1] + 0,
    lambda x: x.detach() * 2,
    lambda x: x.clone().view(2, 12),
]


@pytest.mark.parametrize("fn", VIEWS)
def test_views(fn: object) -> None:
    check_program(fn, torch.randn(2, 3, 4))


JOINS = [
    lambda a, b, i, j: torch.cat([a, b], 1),
    lambda a, b, i, j: torch.cat([a, b, a], -1),
    lambda a, b, i, j: torch.cat([a.flatten(), b.flatten(), torch.tensor([])]),
    lambda a, b, i, j: torch.stack([a, a], 0),
    lambda a, b, i, j: torch.stack([a, a + 1, a * 2], -1),
    lambda a, b, i, j: torch.hstack([a, b]),
    lambda a, b, i, j: torch.vstack([a, a]),
    lambda a, b, i, j: a[i],
    lambda a, b, i, j: a[:, j],
    lambda a, b, i, j: a[i, j],
    lambda a, b, i, j: a[i.view(2, 1), j.view(1, 2)],
    lambda a, b, i, j: a.index_select(0, i),
    lambda a, b, i, j: a.index_select(1, j),
    lambda a, b, i, j: torch.gather(a, 1, j.view(1, 2).expand(3, 2)),
    lambda a, b, i, j: torch.take_along_dim(a, j.view(1, 2), dim=1),
    lambda a, b, i, j: F.embedding(i, a),
    lambda a, b, i, j: F.embedding(torch.stack([i, i]), a, padding_idx=0),
    lambda a, b, i, j: a.scatter(1, j.view(1, 2).expand(3, 2), b),
    lambda a, b, i, j: a.scatter(1, j.view(1, 2).expand(3, 2), 1.5),
    lambda a, b, i, j: a.scatter_add(1, j.view(1, 2).expand(3, 2), b),
    lambda a, b, i, j: a.scatter_reduce(1, j.view(1, 2).expand(3, 2), b, "amax"),
    lambda a, b, i, j: a.scatter_reduce(1, j.view(1, 2).expand(3, 2), b, "prod"),
    lambda a, b, i, j: a.scatter_reduce(1, j.view(1, 2).expand(3, 2), b, "sum", include_self=False),
    lambda a, b, i, j: a.scatter_reduce(
        1, j.view(1, 2).expand(3, 2), b, "amax", include_self=False
    ),
    lambda a, b, i, j: a.scatter_reduce(
        1, j.view(1, 2).expand(3, 2), b, "amin", include_self=False
    ),
    lambda a, b, i, j: a.scatter_reduce(1, j.view(1, 2).expand(3, 2), b, "amin"),
    lambda a, b, i, j: a.scatter_reduce(1, j.view(1, 2).expand(3, 2), b, "mean"),
    lambda a, b, i, j: a.scatter_reduce(
        1, j.view(1, 2).expand(3, 2), b, "mean", include_self=False
    ),
    lambda a, b, i, j: a.scatter_reduce(0, i.view(2, 1).expand(2, 2), b[:2], "mean"),
    lambda a, b, i, j: a.index_put((i,), b[0, 0]),
    lambda a, b, i, j: a.index_put((i, j), b[0], accumulate=True),
    lambda a, b, i, j: a.index_add(1, j, b, alpha=2),
    lambda a, b, i, j: a.index_copy(1, j, b),
    lambda a, b, i, j: a.index_fill(1, j, -1.0),
    lambda a, b, i, j: a.clone().index_put_((i,), b[:2, 0].unsqueeze(1).expand(2, 4)),
    lambda a, b, i, j: torch.zeros(3, 4).scatter_(1, j.view(1, 2).expand(3, 2), 1.0),
]


@pytest.mark.parametrize("fn", JOINS)
def test_joins_indexing_scatter(fn: object) -> None:
    check_program(
        fn, torch.randn(3, 4), torch.randn(3, 2), torch.tensor([2, 0]), torch.tensor([3, 1])
    )


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_scatter_reduce_with_duplicates(reduce: str, include_self: bool, dtype: object) -> None:
    """Every reduction of ``scatter_reduce.two``, with and without ``self``, on targets hit
    several times (mean divides by the count, floor for integers) and targets never hit."""
    idx = torch.tensor([[0, 0, 2, 0], [3, 1, 1, 1]])
    a = (torch.randn(2, 5) * 10).to(dtype)
    s = (torch.randn(2, 4) * 10).to(dtype)
    check_program(lambda x, y: x.scatter_reduce(1, idx, y, reduce, include_self=include_self), a, s)
    check_program(
        lambda x, y: x.clone().scatter_reduce_(1, idx, y, reduce, include_self=include_self),
        a,
        s,
    )


def test_scatter_mean_divides_only_under_a_value_guard() -> None:
    """Note [Scatter mean division]: which elements a scatter targets depends on the
    index values, so the division is charged nowhere (a lower bound); the sums and the
    counts once per index element."""
    from solar.einsum import lift_to_einsum

    idx = torch.tensor([[0, 0, 2, 0], [3, 1, 1, 1]])
    lowered = check_program(
        lambda x, y: x.scatter_reduce(1, idx, y, "mean"), torch.randn(2, 5), torch.randn(2, 4)
    )
    flops = sum(node.flops.evaluate({}) for node in lift_to_einsum(lowered.program).nodes)
    assert flops == 2 * idx.numel()


def test_scatter_with_duplicates_accumulates() -> None:
    idx = torch.tensor([[0, 0, 1]])
    check_program(lambda a, s: a.scatter_add(1, idx, s), torch.zeros(1, 3), torch.ones(1, 3))
    check_program(
        lambda a, s: a.index_put((idx[0],), s[0], accumulate=True), torch.zeros(3), torch.ones(1, 3)
    )


def _put(a: torch.Tensor, indices: list[object], v: torch.Tensor, **kw: bool) -> torch.Tensor:
    return torch.ops.aten.index_put(a, indices, v, **kw)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, v, i, j: _put(a, [None, i, None, j], v[:2, :3, :4]),  # index dims lead
        lambda a, v, i, j: _put(a, [None, None, i, j], v[:3, :3, :2], accumulate=True),
        lambda a, v, i, j: _put(a, [i.view(2, 1), None, None, j.view(1, 2)], v[0, :1, :1]),
        lambda a, v, i, j: a.index_put((i - 3,), v[0, 0, 0]),  # negative: from the end
    ],
)
def test_index_put_advanced_layouts(fn: object) -> None:
    """``index_put`` is a scatter over NumPy's advanced-indexing layout: broadcast index
    tensors, non-adjacent index dims (moved to the front), negative indices."""
    check_program(
        fn,
        torch.randn(3, 3, 4, 5),
        torch.randn(3, 4, 5),
        torch.tensor([2, 0]),
        torch.tensor([4, 1]),
    )


REARRANGE = [
    lambda x: F.pad(x, (1, 2)),
    lambda x: F.pad(x, (1, -1, 2, 0), value=3.0),
    lambda x: F.pad(x, (0, 0, 0, 0, 1, 1)),
    lambda x: F.pad(x, (-1, -1)),
    lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"),
    lambda x: F.pad(x[0], (2, 1), mode="reflect"),
    lambda x: F.pad(x, (1, 2, 1, 1), mode="replicate"),
    lambda x: F.pad(x[0], (0, 3), mode="replicate"),
    lambda x: F.pad(x.unsqueeze(0), (1, 1, 1, 1, 1, 1), mode="replicate"),
    lambda x: F.pad(x.unsqueeze(0), (1, 0, 0, 1, 1, 1), mode="reflect"),
    lambda x: x.flip(-1),
    lambda x: x.flip(0, 2),
    lambda x: x.roll(1, -1),
    lambda x: x.roll((1, -2, 5), (1, 2, 3)),
    lambda x: x.repeat(1, 2, 1, 3),
    lambda x: x.repeat(2, 1, 1, 1, 1),
    lambda x: x.tile(2),
    lambda x: x.tril(),
    lambda x: x.triu(1),
    lambda x: x.tril(-2),
    lambda x: x.triu(-1),
    lambda x: torch.diag(x[0, 0, 0]),
    lambda x: torch.diag(x[0, 0, 0], 2),
    lambda x: torch.diag(x[0, 0, 0], -1),
    lambda x: torch.diag(x[0, 0]),
    lambda x: torch.diag_embed(x[0]),
    lambda x: F.pixel_shuffle(x, 2),
    lambda x: F.pixel_unshuffle(x[:, :, :2, :2], 2),
    lambda x: F.pixel_unshuffle(x, 1),
    lambda x: F.channel_shuffle(x, 2),
    lambda x: F.channel_shuffle(x, 4),
    lambda x: F.channel_shuffle(x[:, :, 0], 1),
    lambda x: torch.nn.ChannelShuffle(2)(x.unsqueeze(-1)),
]


@pytest.mark.parametrize("fn", REARRANGE)
def test_pads_and_rearranging_copies(fn: object) -> None:
    check_program(fn, torch.randn(2, 4, 3, 3))


@pytest.mark.parametrize(
    ("shape", "pad"),
    [
        ((2, 3, 5), (1, 2)),
        ((2, 3, 5), (0, 5)),
        ((1, 2, 3, 4), (1, 2, 1, 1)),
        ((1, 2, 3, 4), (4, 0, 3, 3)),
        ((1, 2, 3, 4, 2), (1, 1, 0, 2, 2, 1)),
        ((3, 4), (2, 1)),
    ],
)
def test_circular_pad_is_one_call(shape: tuple[int, ...], pad: tuple[int, ...]) -> None:
    """Note [Whole circular pad]: recorded as one ``_pad_circular`` (eager's slice copies
    read the uninitialised corners), one kernel that writes each element once."""
    x = torch.randn(*shape)
    fn = lambda t: F.pad(t, pad, mode="circular")  # noqa: E731
    assert [c.target for c in trace_module(fn, (x,)).calls] == ["aten._pad_circular.default"]
    low = check_program(fn, x)
    assert len(low.program.kernels) == 1
    check_op(torch.ops.aten._pad_circular.default, x, list(pad))


def test_circular_pad_conv_and_cropping() -> None:
    """``padding_mode="circular"`` convolutions pad whole; a negative (cropping) circular
    pad keeps eager's decomposition."""
    conv = torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="circular")
    check_program(conv, torch.randn(1, 2, 5, 6), atol=1e-4)
    check_program(lambda t: F.pad(t, (-1, 2), mode="circular"), torch.randn(2, 3, 5))


@pytest.mark.parametrize("conv", [False, True])
def test_circular_pad_training_step(conv: bool) -> None:
    """A training step records the pad whole too; autograd records its backward."""
    import solar

    torch.manual_seed(0)
    if conv:
        model = torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="circular")
    else:
        model = torch.nn.Sequential(torch.nn.CircularPad2d((1, 2, 2, 0)), torch.nn.Conv2d(2, 2, 1))
    report = solar.analyze(model, (torch.randn(2, 2, 5, 6),), train=True)
    assert report.coverage.complete, report.coverage.uncovered
    assert report.validation.status == "passed", report.validation.reason


def test_constant_pad_partitions_output() -> None:
    """Every output element is written exactly once: no element is written twice."""
    low = check_program(lambda x: F.pad(x, (1, 2, 3, 0)), torch.randn(2, 3))
    (kernel,) = low.program.kernels
    assert len(kernel.body) == 4  # left, right, top borders + interior


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x[:, [-1, 0]],
        lambda x: x[torch.tensor([-2, 1, -2])],
        lambda x: x[torch.tensor([[0, -1]]), torch.tensor([[-3], [2]])],
        lambda x: x.index_put((torch.tensor([-1, 0]),), torch.ones(2, 5)),
        lambda x: x.index_put((torch.tensor([-1, -1]),), torch.ones(5), accumulate=True),
    ],
)
def test_advanced_index_negative_indices(fn: object) -> None:
    """Negative indices count from the end (transformers: ``input_ids[:, [-1, 0]]``)."""
    check_program(fn, torch.randn(4, 5))


ROT90 = [
    (1, (0, 1)),
    (2, (0, 1)),
    (3, (0, 1)),
    (0, (1, 2)),
    (4, (1, 2)),
    (-1, (1, 2)),
    (5, (2, 0)),
    (1, (-1, -3)),
    (-2, (0, 2)),
    (3, (2, 1)),
]


@pytest.mark.parametrize(("k", "dims"), ROT90)
def test_rot90_is_a_free_copy(k: int, dims: tuple[int, int]) -> None:
    """``rot90`` (any ``k``, any dims pair, on non-square dims) is one copying kernel: no
    FLOPs, each element read and written once."""
    from solar.einsum import lift_to_einsum

    x = torch.randn(2, 3, 4)
    low = check_program(lambda t: torch.rot90(t, k, dims), x)
    graph = lift_to_einsum(low.program)
    assert sum(node.flops.evaluate({}) for node in graph.nodes) == 0
    assert len(low.program.kernels) == 1
