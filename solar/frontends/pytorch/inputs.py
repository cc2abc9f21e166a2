"""The inputs a user gives instead of ``get_inputs()``: an ``--inputs`` file or shapes.

Contract: `load_inputs_file(path)` and `inputs_from_shapes(specs)` return ``(positional,
keyword)`` inputs as dense CPU tensors; everything is checked before it is allocated.

Note [Given inputs]: ``.npz`` archives are read by `solar.files.load_npz` (headers
checked before any array is read; errors E0942, exit 2, as for every ``.npz``); arrays
SOLAR cannot pass to a program (bytes, strings, datetimes, structured records) are
refused, big-endian ones are converted to native order (the values are unchanged), and
positional arrays are ordered by their index (``arr_1`` stored before ``arr_0`` is
still the second input). A ``.pt`` file is a zip whose records ``torch.save`` stores
uncompressed, so a compressed record (a "zip bomb": 4 MB that inflates to 4 GiB) or
records declaring more bytes than the file holds are refused from the zip directory
before ``torch.load``; the tensors it holds must be dense (strided, not quantized,
sparse or nested) and on the CPU (a ``meta`` tensor holds no values). Shapes of
``--input-shape`` are drawn for real, so their bytes are counted first against
`MAX_SHAPE_INPUT_BYTES`.

Error codes: E0507 an inputs file of another structure or holding tensors SOLAR cannot
use; E0505 ``--input-shape`` inputs over `MAX_SHAPE_INPUT_BYTES`.
"""

from __future__ import annotations

import math
import re
import zipfile
from pathlib import Path
from typing import Any, Final

from solar.diagnostics import FrontendError
from solar.frontends.inputs import InputShape
from solar.frontends.kit import FRAMEWORK_DTYPE_NAMES
from solar.ir import DType

__all__ = [
    "MAX_SHAPE_INPUT_BYTES",
    "check_input_tensors",
    "inputs_from_shapes",
    "load_inputs_file",
]

MAX_SHAPE_INPUT_BYTES: Final = 2 << 30
"""Inputs drawn from ``--input-shape`` are real tensors: at most 2 GiB of them (as a
real build, `solar.frontends.pytorch.loader.REAL_BUDGET_BYTES`)."""

_POSITIONAL_NPZ: Final = re.compile(r"^arr_(\d+)$")
_NPZ_REFUSED: Final = {"S": "bytes", "U": "strings", "M": "datetimes", "m": "timedeltas",
                       "V": "structured records", "O": "Python objects"}  # fmt: skip


def load_inputs_file(path: Path) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional and keyword inputs from a ``.npz`` or ``.pt`` file (Note [Given inputs]).

    ``.npz``: arrays named ``arr_0, arr_1...`` (``np.savez(f, a, b)``) are positional, in
    index order; any other name is a keyword (``np.savez(f, x=a)``). ``.pt``
    (``torch.load(weights_only=True)``): a tensor is the one positional input, a list or
    tuple the positional inputs, a dict of str the keyword inputs.

    Raises:
        UsageError: E0901/E0902/E0943 the file; E0942 an invalid ``.npz``.
        FrontendError: E0507 unreadable, unsafe or of another structure.
    """
    from solar.files import MAX_NPZ_BYTES, check_input, load_npz

    check_input(path, max_bytes=MAX_NPZ_BYTES)  # a FIFO or a device is refused unread
    if path.suffix == ".npz":
        return _npz_inputs(path, load_npz(path))
    _check_pt_records(path)
    return _pt_inputs(path)


def _npz_inputs(path: Path, arrays: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    import numpy as np
    import torch

    def tensor(name: str, a: np.ndarray) -> torch.Tensor:
        refused = _NPZ_REFUSED.get(a.dtype.kind)
        if refused is not None or a.dtype.fields is not None:
            raise FrontendError(
                f"inputs file {path}: array `{name}` holds {refused or 'structured records'} "
                f"(dtype {a.dtype.str}); inputs are numeric or boolean arrays",
                code="E0507",
            )
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))  # big-endian: the same values, native
        return torch.from_numpy(a)

    positional = sorted(
        (int(m.group(1)), k) for k in arrays if (m := _POSITIONAL_NPZ.match(k)) is not None
    )
    if [i for i, _ in positional] != list(range(len(positional))):
        raise FrontendError(
            f"inputs file {path}: positional arrays "
            f"{', '.join(k for _, k in positional)} leave a gap; name them arr_0, arr_1, ...",
            code="E0507",
        )
    args = tuple(tensor(k, arrays[k]) for _, k in positional)
    kwargs = {k: tensor(k, a) for k, a in arrays.items() if not _POSITIONAL_NPZ.match(k)}
    return args, kwargs


def _check_pt_records(path: Path) -> None:
    """Refuse a ``.pt`` whose zip records are compressed or larger than the file."""
    if not zipfile.is_zipfile(path):  # the legacy format: torch.load reads it, bounded
        return
    size = path.stat().st_size
    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise FrontendError(f"cannot read inputs file {path}: {err}", code="E0507") from None
    for info in records:
        if info.compress_type != zipfile.ZIP_STORED or info.file_size > size:
            raise FrontendError(
                f"inputs file {path}: record `{info.filename}` is compressed "
                f"({info.compress_size:,} bytes declaring {info.file_size:,}); torch.save "
                "never compresses, so it is refused unread (a zip bomb?)",
                code="E0507",
            )


def _pt_inputs(path: Path) -> tuple[tuple[Any, ...], dict[str, Any]]:
    import pickle

    import torch

    try:
        obj = torch.load(path, weights_only=True)
    except (OSError, ValueError, RuntimeError, EOFError, pickle.UnpicklingError) as err:
        raise FrontendError(f"cannot read inputs file {path}: {err}", code="E0507") from err
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    if isinstance(obj, torch.Tensor):
        args = (obj,)
    elif isinstance(obj, list | tuple):
        args = tuple(obj)
    elif isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
        kwargs = dict(obj)
    else:
        raise FrontendError(f"inputs file {path} holds {type(obj).__name__}", code="E0507")
    check_input_tensors(f"inputs file {path}", args, kwargs)
    return args, kwargs


def check_input_tensors(
    origin: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    any_device: bool = False,
    meta: bool = False,
) -> None:
    """Refuse a tensor a program cannot be run on for its reference (Note [Given inputs]):
    the one check of inputs from a file and from ``get_inputs()`` (where a tensor on an
    accelerator is the program's own choice: ``any_device``; and on the meta device, the
    build's own: ``meta``).

    Raises:
        FrontendError: E0507 a quantized, nested, sparse or (unless ``meta``) meta tensor,
            or, unless ``any_device``, one off the CPU, in ``args``/``kwargs`` or a list
            in them.
    """
    import torch
    from torch.utils._pytree import keystr, tree_flatten_with_path

    leaves, _ = tree_flatten_with_path((list(args), kwargs))
    for key, value in leaves:
        if not isinstance(value, torch.Tensor):
            continue
        device = value.device.type
        kind = (
            "a quantized" if value.is_quantized
            else "a nested" if value.is_nested
            else f"a {value.layout} (not strided)" if value.layout != torch.strided
            else "a meta (no values)" if device == "meta" and not meta
            else f"a {device}" if device not in ("cpu", "meta") and not any_device
            else None
        )  # fmt: skip
        if kind is not None:
            raise FrontendError(
                f"{origin}: input{keystr(key[1:])} is {kind} tensor; inputs are dense "
                "tensors with values (.to_dense(), .cpu())",
                code="E0507",
            )


def inputs_from_shapes(shapes: tuple[InputShape, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Seeded random tensors for ``--input-shape`` specs (positional, then keyword).

    Raises:
        FrontendError: E0505 they would take more than `MAX_SHAPE_INPUT_BYTES`.
    """
    import torch

    dtypes = [getattr(torch, FRAMEWORK_DTYPE_NAMES[DType(spec.dtype)]) for spec in shapes]
    total = sum(
        math.prod(spec.shape) * dtype.itemsize for spec, dtype in zip(shapes, dtypes, strict=True)
    )
    if total > MAX_SHAPE_INPUT_BYTES:
        raise FrontendError(
            f"the inputs of --input-shape take {total:,} bytes, over the "
            f"{MAX_SHAPE_INPUT_BYTES / 2**30:.0f} GiB drawn for real",
            code="E0505",
            notes=("give smaller shapes; the bounds at other sizes need no real inputs "
                   "(--set NAME=VALUE on the model file's size constants)",),
        )  # fmt: skip
    from solar.frontends.pytorch.instance import seed_everything

    seed_everything()
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for spec, dtype in zip(shapes, dtypes, strict=True):
        if spec.dtype == "bool":
            t = torch.ones(spec.shape, dtype=dtype)
        elif dtype.is_floating_point:
            t = torch.randn(spec.shape, dtype=dtype)
        else:
            t = torch.randint(0, spec.high, spec.shape, dtype=dtype)
        if spec.name is None:
            args.append(t)
        else:
            kwargs[spec.name] = t
    return tuple(args), kwargs
