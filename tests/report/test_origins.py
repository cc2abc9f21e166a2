"""Kernel origins (Note [Kernel origins]): the prefix lookup names the same module and op
as a scan of every module path, the longest path winning and the first of equal lengths."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from solar.report.breakdown import kernel_origin


def _scan(name: str, module_paths: Sequence[str]) -> tuple[str, str]:
    """The definition: every path tried in order."""

    def ident(path: str) -> str:
        return re.sub(r"[^A-Za-z0-9_]", "_", path).strip("_")

    best = ""
    for path in module_paths:
        if ident(path) and name.startswith(ident(path) + "_") and len(path) > len(best):
            best = path
    rest = name[len(ident(best)) + 1:] if best else name
    return best, re.sub(r"(_\d+)+$", "", rest) or rest


_PART = st.sampled_from(["a", "b", "0", "1", "blk", "fc", "_", "x_y"])
_PATH = st.lists(_PART, min_size=1, max_size=4).map(".".join)
_NAME = st.lists(_PART, min_size=1, max_size=6).map("_".join)


@given(st.lists(_PATH, max_size=8), st.lists(_NAME, min_size=1, max_size=5))
def test_prefix_lookup_matches_the_scan(paths: list[str], names: list[str]) -> None:
    for name in names:
        assert kernel_origin(name, paths) == _scan(name, paths)


def test_examples() -> None:
    paths = ["layer1", "layer1.0", "layer1.0.conv1", "layer1_0"]
    assert kernel_origin("layer1_0_conv1_conv2d_2", paths) == ("layer1.0.conv1", "conv2d")
    assert kernel_origin("layer1_0_add", paths) == ("layer1.0", "add")  # first of equal length
    assert kernel_origin("mm_3_4", paths) == ("", "mm")
