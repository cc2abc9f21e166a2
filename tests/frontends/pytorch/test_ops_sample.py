"""grid_sampler_2d (ops_sample.py) against torch: bilinear and nearest, zeros and border
padding, both ``align_corners``; the modes not lowered stay uncovered."""

from __future__ import annotations

import pytest
from nn_opcheck import check_op

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.torch

A = torch.ops.aten

from torch_check import check_program  # noqa: E402


def _grid(n: int, h: int, w: int, spread: float = 1.3) -> torch.Tensor:
    """Sampling points in and around the image (``spread`` > 1 reaches the padding)."""
    return (torch.rand(n, h, w, 2) * 2 - 1) * spread


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("padding", [0, 1])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize(("shape", "out"), [((2, 3, 5, 6), (4, 7)), ((1, 1, 1, 4), (3, 2))])
def test_grid_sampler_2d(
    mode: int, padding: int, align: bool, shape: tuple[int, ...], out: tuple[int, int]
) -> None:
    torch.manual_seed(0)
    x = torch.randn(*shape)
    check_op(A.grid_sampler_2d.default, x, _grid(shape[0], *out), mode, padding, align)


def test_grid_sample_exact_pixels_and_bf16() -> None:
    """Grid points on pixel centres (integer coordinates, nearest ties) and 16-bit data."""
    x = torch.randn(1, 2, 4, 4)
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, 4), torch.linspace(-1, 1, 7), indexing="ij")
    grid = torch.stack([xs, ys], -1)[None]
    check_op(A.grid_sampler_2d.default, x, grid, 0, 0, True)
    check_op(A.grid_sampler_2d.default, x, grid, 1, 0, True)
    xb, gb = x.bfloat16(), grid.bfloat16()
    check_op(A.grid_sampler_2d.default, xb, gb, 0, 1, False, rtol=2e-2, atol=2e-2)


def test_spatial_transformer_is_covered() -> None:
    """``F.affine_grid`` + ``F.grid_sample``: the sampling is lowered end to end."""
    theta = torch.tensor([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.0]]])
    lowered = check_program(
        lambda x, g: F.grid_sample(x, g, align_corners=False),
        torch.randn(1, 3, 6, 6),
        F.affine_grid(theta, [1, 3, 5, 5], align_corners=False),
    )
    assert lowered.fully_covered


@pytest.mark.parametrize(("mode", "padding"), [("bicubic", "zeros"), ("bilinear", "reflection")])
def test_modes_not_lowered_are_uncovered(mode: str, padding: str) -> None:
    lowered = check_program(
        lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=False),
        torch.randn(1, 2, 5, 5),
        _grid(1, 3, 3),
        covered=False,
    )
    assert [u.target for u in lowered.coverage] == ["aten.grid_sampler_2d.default"]
    assert lowered.coverage[0].bytes_share > 0


AFFINE_SIZES = [
    (2, 3, 4, 5),
    (1, 1, 1, 6),
    (3, 2, 5, 1),
    (2, 1, 3, 4, 5),
    (1, 2, 1, 2, 3),
]


@pytest.mark.filterwarnings("ignore:Since version 1.3.0, affine_grid")  # unit-size grids
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", AFFINE_SIZES)
def test_affine_grid(size: tuple[int, ...], align: bool) -> None:
    """``F.affine_grid`` (2-D and 3-D, both ``align_corners``, size-1 dims): 2 FLOPs per
    output element plus the per-row and coordinate terms (Note [Affine grid]), below
    eager's bmm with the base grid."""
    from solar.einsum import lift_to_einsum

    nsp = len(size) - 2
    theta = torch.randn(size[0], nsp, nsp + 1)
    lowered = check_program(lambda t: F.affine_grid(t, list(size), align_corners=align), theta)
    flops = sum(node.flops.evaluate({}) for node in lift_to_einsum(lowered.program).nodes)
    n, spatial = size[0], size[2:]
    coords = sum(2 * e for e in spatial if e > 1)
    partials, prefix = 0, n
    for e in spatial:
        prefix *= e
        partials += 2 * prefix * nsp
    assert flops == coords + partials
    assert flops <= coords + (2 * nsp + 1) * nsp * prefix  # eager: nsp + 1 products, nsp adds
