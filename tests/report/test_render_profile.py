"""The next-steps kernel table keeps to ~100 columns with full names and source lines
(issue 31, Note [Full names] in `solar.report.render_profile`)."""

from __future__ import annotations

import pytest

from solar.report.render import next_step
from solar.report.render_profile import LINE_W, kernel_table
from solar.report.schema import KernelRow

LONG = "MultiHeadDotProductAttention_0_query_dot_general_with_a_long_tail_3"


def _kernel(name: str, source: str | None, unit: str = "tensor") -> KernelRow:
    return KernelRow(name=name, flops=2e9, bytes=8e6, unit=unit, precision="tf32",
                     time_s=1e-6, bottleneck="compute", source=source,
                     arithmetic_intensity_flops_per_byte=250.0)


@pytest.mark.parametrize(
    ("names", "source"),
    [
        ((LONG, "blocks_0_mlp_fc1_addmm"), "a_rather_long_model_file_name.py:1234"),
        ((LONG, "add"), None),
        (("up_addmm", "gelu"), "kernelbench_mlp.py:21"),
    ],
)
def test_rows_fit_100_columns_and_names_are_whole(names: tuple[str, ...], source: str | None
                                                  ) -> None:
    lines = kernel_table([_kernel(n, source) for n in names], 8, next_step)
    text = "\n".join(lines)
    for n in names:  # never cut (the name line may be as long as the name itself)
        assert f"    {n}" in text
    numbers = [ln for ln in lines if "µs" in ln]
    assert len(numbers) == len(names)
    assert all(len(ln) <= LINE_W for ln in numbers)
    if source:  # each kernel's source line beside its name
        assert all(f"    {n}  ({source})" in lines for n in names)
    assert all(ln == ln.rstrip() for ln in lines)


def test_short_rows_stay_on_one_line() -> None:
    lines = kernel_table([_kernel("mm", None, "vector"), _kernel("add", None, "vector")], 8,
                         next_step)
    assert lines[1].split() == ["kernel", "bound", "share", "FLOPs", "bytes", "AI", "F/B", "roof",
                                "next", "step"]  # Nsight Compute's per-kernel figures
    assert lines[2].startswith("    mm ") and "µs" in lines[2]
    assert all(len(ln) <= LINE_W for ln in lines[1:])
