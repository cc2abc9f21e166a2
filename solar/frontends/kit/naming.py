"""The IR naming convention of every frontend's program interface.

Contract: pure string functions. ``x0, x1, ...`` are the program's input tensors in
order, ``p_<path>`` its parameters and buffers (``state_dict`` key or Flax parameter
path, non-identifier characters replaced by ``_``), ``y0, y1, ...`` its output tensors,
and ``u<k>_<op>`` the values standing for an uncovered op's outputs. The tracers
declare these names, the references key their arrays by them, and the LLM frontend's
interface check asks a translation for them.
"""

from __future__ import annotations

import re

__all__ = [
    "INPUT_PREFIX",
    "OUTPUT_PREFIX",
    "PARAM_PREFIX",
    "UNCOVERED_PREFIX",
    "input_name",
    "output_name",
    "param_name",
    "uncovered_name",
]

INPUT_PREFIX = "x"
PARAM_PREFIX = "p_"
OUTPUT_PREFIX = "y"
UNCOVERED_PREFIX = "u"


def input_name(index: int) -> str:
    """IR name of the ``index``-th input tensor (``get_inputs()[index]``).

    >>> input_name(1)
    'x1'
    """
    return f"{INPUT_PREFIX}{index}"


def output_name(index: int) -> str:
    """IR name of the ``index``-th output tensor.

    >>> output_name(0)
    'y0'
    """
    return f"{OUTPUT_PREFIX}{index}"


def param_name(path: str) -> str:
    """IR name of a parameter or buffer at ``path`` (a ``state_dict`` key).

    >>> param_name("blocks.0.ln.weight")
    'p_blocks_0_ln_weight'
    """
    return PARAM_PREFIX + re.sub(r"[^A-Za-z0-9_]", "_", path)


def uncovered_name(index: int, op: str, output: int = 0) -> str:
    """IR name hint of output ``output`` of an uncovered op (an extra program input).

    ``index`` numbers the op: its call index (PyTorch) or a running count (JAX).

    >>> uncovered_name(4, "sort"), uncovered_name(4, "topk", 1)
    ('u4_sort', 'u4_topk_1')
    """
    return f"{UNCOVERED_PREFIX}{index}_{op}" + (f"_{output}" if output else "")
