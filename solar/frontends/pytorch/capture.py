"""Capture a PyTorch program at ATen level, as eager PyTorch runs it.

Contract: ``ProgramSource -> TorchCapture``. A `TorchDispatchMode` (recorder.py) records every
ATen call that eager execution dispatches (one call = one kernel launch), with
tensors replaced by stable integer ids. By default nothing is allocated, so a model
with tens of GiB of weights is captured in seconds: the program is first built and
run on the ``meta`` device (`MetaMode`, Note [Meta capture] in meta_mode.py: the same
meta kernels as FakeTensors without the cost of a ``FakeTensorMode``); when that
cannot run it, or may record other calls than eager on CPU, it is re-run over
FakeTensors (``FakeTensorMode``). No graph exporter is
involved, so Python control flow, loops and in-place ops are captured exactly as
they run. One exception: whole-sequence RNN calls are recorded as one call, not their
per-step decomposition (Note [Composite RNN capture] in composite.py).

When fake execution cannot proceed because it needs real values (``.item()``,
``nonzero``, data-dependent control flow), the program is re-run with real tensors if
its inputs and parameters fit `REAL_BUDGET_BYTES`, and the capture says so
(`CaptureInfo.used_real_values`). Otherwise `FrontendError` E0505. The real build is
itself held to that budget before it allocates (`build_real_within_budget`), so a
model whose construction needs real values and 40 GB fails at once with E0505.

Note [Independent FLOP count]: while recording, each call's FLOPs are also counted by
torch's own formulas, ``torch.utils.flop_counter.flop_registry``, the table
``FlopCounterMode`` applies to every op it sees (`RecordedCall.counted_flops`, on the
same meta or fake tensors: nothing is allocated), and the part of that count which
multiplies zero padding (`RecordedCall.padding_flops`, Note [Padding FLOPs] in
flops.py). The table is applied directly rather than by entering ``FlopCounterMode``:
its dispatch mode imports ``torch._dynamo`` (a second, Note [Meta capture]) and may
decompose ops below the recorder. tests/frontends/pytorch/test_validation_strategies.py
checks that the sum equals ``FlopCounterMode``'s total over the same forward. The
report compares SOLAR's FLOPs with this count (docs/report.md, coverage).

The recorder itself is recorder.py; `replay_values` (replay.py) re-runs the program for
real and returns the values the reference path needs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from solar.diagnostics import FrontendError, exception_text
from solar.frontends.pytorch.caches import caches_filled_here_cleared
from solar.frontends.pytorch.capture_types import (
    CallKind,
    CaptureInfo,
    NamedTensor,
    RecordedCall,
    TensorArg,
    TensorMeta,
    TorchCapture,
    to_numpy,
)
from solar.frontends.pytorch.loader import (
    REAL_BUDGET_BYTES,
    Instance,
    ProgramSource,
    instantiate,
    meta_to_fake,
)
from solar.frontends.pytorch.meta_mode import MetaBlockedError, MetaMode, dynamo_import_deferred
from solar.frontends.pytorch.recorder import (
    Ids,
    Recorder,
    register_tensors,
    run_recorded,
    tensor_bytes,
)
from solar.frontends.pytorch.reparam import attributes_restored

__all__ = [
    "REAL_BUDGET_BYTES",
    "CallKind",
    "CaptureInfo",
    "MetaMode",
    "NamedTensor",
    "RecordedCall",
    "TensorArg",
    "TensorMeta",
    "TorchCapture",
    "capture_program",
    "plain_outputs",
    "to_numpy",
]


def _fake_blocked_errors() -> tuple[type[BaseException], ...]:
    from torch._subclasses import fake_tensor as ft

    return (
        ft.DataDependentOutputException,
        ft.DynamicOutputShapeException,
        ft.UnsupportedOperatorException,
    )


def capture_program(
    source: ProgramSource, *, real: bool = False, on_meta: bool | None = None
) -> TorchCapture:
    """Capture ``source`` at ATen level (fake tensors unless ``real`` or forced); no
    tensor of its run stays in a function cache (Note [Function caches] in caches.py).

    Args:
        source: the program.
        real: capture with real tensors from the start.
        on_meta: ``True``: capture on the meta device or fail; ``False``: do not try
            it; ``None``: try it first (Note [Meta re-captures]).

    Returns:
        The capture.

    Raises:
        FrontendError: loading/running errors (E0501-E0504), E0505 when real values are
            needed but inputs+parameters exceed `REAL_BUDGET_BYTES`.
    """
    with caches_filled_here_cleared():
        return _capture(source, real=real, on_meta=on_meta)


def _capture(source: ProgramSource, *, real: bool, on_meta: bool | None) -> TorchCapture:
    reason = "requested" if real else None
    if not real:
        meta, built = (
            _capture_on_meta(source, strict=bool(on_meta)) if on_meta is not False else (None, None)
        )
        if meta is not None:
            return meta
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        with _quiet_fake_tensors():  # the meta build, on fake tensors, where it converts
            inst = meta_to_fake(built, source, fake_mode) if built is not None else None
            inst = inst or instantiate(source, fake_mode=fake_mode)
        try:
            with _quiet_fake_tensors():
                return _finish(source, inst, fake_mode, None)
        except FrontendError as err:
            cause = err.__cause__
            if err.code != "E0501" or cause is None:
                raise
            blocked = isinstance(cause, _fake_blocked_errors())
            need = tensor_bytes(inst.input_tree()) + tensor_bytes(list(inst.state.values()))
            if need > REAL_BUDGET_BYTES:
                if not blocked:
                    raise
                raise FrontendError(
                    "the program needs real tensor values (data-dependent op), but its "
                    f"inputs and parameters take {need / 2**30:.1f} GiB",
                    code="E0505",
                    notes=(
                        f"fake execution stopped at: {exception_text(cause)}",
                        "reduce the sizes in the model file",
                    ),
                ) from err
            reason = f"{type(cause).__name__}: {exception_text(cause)}".splitlines()[0]
    # the fallback builds within the budget (Note [Memory budget] in solar.budget), and
    # through `instantiate`, so a training step, batch cut or float64 is never dropped
    inst = instantiate(source, within_budget=not real)
    return _finish(source, inst, None, reason)


@contextlib.contextmanager
def _quiet_fake_tensors() -> Iterator[None]:
    """Mute what FakeTensors themselves make torch report: the logged traceback of an op
    that raises (the error reaches the user as a diagnostic) and the deprecation
    warning ``deepcopy`` triggers by reading a FakeTensor's data pointer."""
    import logging
    import warnings

    logger = logging.getLogger("torch._subclasses.fake_tensor")
    old = logger.disabled
    logger.disabled = True
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Accessing the data pointer of FakeTensor")
            yield
    finally:
        logger.disabled = old


# Note [Meta re-captures]
# ~~~~~~~~~~~~~~~~~~~~~~~
# Symbolic formulas capture the program again at other sizes (Note [Symbolic sizes by
# re-binding]). When the first capture ran on the meta device, the program runs there:
# a re-capture that fails on meta fails because of its sizes (a doubled size that breaks
# a shape constraint), and the fake-tensor path would fail the same way after importing
# torch._dynamo (about 0.7 s) for nothing. Such re-captures pass ``on_meta=True`` and the
# size simply stays constant, as it would after the fake path failed too. When the first
# capture could not run on meta, no re-capture tries it (``on_meta=False``: the same
# program meets the same op meta cannot run, and the attempt would build the model once
# more for nothing; Note [Model-file runs] in `solar.frontends.protocol`).

_META_ERRORS = (RuntimeError, NotImplementedError, TypeError, ValueError, AttributeError)
"""What meta execution raises for what it cannot do (besides user-code `FrontendError` E0501)."""


def _capture_on_meta(
    source: ProgramSource, *, strict: bool = False
) -> tuple[TorchCapture | None, Instance | None]:
    """The capture on the meta device, or ``None`` when meta execution cannot run it,
    with the program built on meta when only its forward could not run there (its
    attributes as they were before the forward: the fake capture takes it, Note
    [Model-file runs]).

    Any failure (including a genuine error in the user's code, which the fake-tensor
    run then reports) returns no capture; nothing is built for real here. With ``strict``
    (Note [Meta re-captures]) the failure is raised instead: the user's own error as it
    is, anything else as E0501 naming what meta execution could not do.
    """
    mode = MetaMode()
    inst = None
    try:
        with dynamo_import_deferred():
            inst = instantiate(source, fake_mode=mode, real_fallback=False)
            with attributes_restored(inst.module):
                capture = _finish(source, inst, mode, None)
    except FrontendError as err:
        if err.code != "E0501" or strict:
            raise
        return None, inst
    except (MetaBlockedError, *_META_ERRORS) as err:
        if strict:
            raise _not_on_meta(source, exception_text(err) or type(err).__name__) from err
        return None, inst
    if mode.blocked is not None and strict:
        raise _not_on_meta(source, mode.blocked)
    return (capture, None) if mode.blocked is None else (None, inst)


def _not_on_meta(source: ProgramSource, why: str) -> FrontendError:
    return FrontendError(
        f"{source.name} does not run on the meta device at these sizes: {why.splitlines()[0]}",
        code="E0501",
        notes=("a program captured on meta is captured again there only "
               "(Note [Meta re-captures])",),
    )


def _finish(
    source: ProgramSource, inst: Instance, fake_mode: Any, reason: str | None
) -> TorchCapture:
    from torch.utils._pytree import tree_flatten

    ids = Ids()
    inputs, params = register_tensors(inst, ids)
    rec = Recorder(ids, inst.attr_names, frozenset(), None)
    rec.count_flops = True
    out = run_recorded(inst, rec, fake_mode)
    leaves, _ = tree_flatten(plain_outputs(out))
    outputs = tuple(_output_meta(x, ids) for x in leaves)
    if all(o is None for o in outputs) and not any(c.mutated for c in rec.calls):
        raise FrontendError(  # nothing to bound: no "coverage complete" over an empty program
            f"{source.name} returned {type(out).__name__}: no tensor output (and it wrote no "
            "tensor in place), so there is nothing to bound",
            code="E0503",
            notes=("the entry must return a tensor (or a container of tensors); a function "
                   "that builds a module is an entry too: it is built, then called",),
        )  # fmt: skip
    info = CaptureInfo(
        used_real_values=fake_mode is None,
        real_reason=reason,
        input_bytes=tensor_bytes(inst.input_tree()),
        param_bytes=tensor_bytes(list(inst.state.values())),
        sizes=dict(inst.sizes),
        num_calls=len(rec.calls),
        counted_flops=sum(c.counted_flops or 0 for c in rec.calls),
        padding_flops=sum(c.padding_flops for c in rec.calls),
        train_step=getattr(inst.fn, "solar_train_step", None),
        on_meta=isinstance(fake_mode, MetaMode),
    )
    return TorchCapture(
        source.name,
        tuple(rec.calls),
        inputs,
        params,
        tuple(rec.constants),
        outputs,
        info,
        source,
        tuple(rec.constant_sites),
    )


def plain_outputs(out: Any, depth: int = 0, *, in_object: bool = False) -> Any:
    """``out`` as containers the pytree flattens, so every tensor it holds is an output.

    ``ModelOutput`` and other registered containers, tuples, lists and dicts stay
    containers (their items converted); a dataclass becomes a dict of its fields; any
    other object holding tensors (transformers' ``DynamicCache``: the keys and values a
    forward returns for reuse) a dict of its public attributes, a few levels deep. What
    such an object holds besides tensors and numbers (a device) is no output; anything
    else the program returns is left for `_output_meta` to refuse (E0503).
    """
    import dataclasses

    import torch
    from torch.utils._pytree import SUPPORTED_NODES

    if isinstance(out, torch.Tensor) or out is None or isinstance(out, bool | int | float | str):
        return out
    if depth > 6:
        return None
    if type(out) in SUPPORTED_NODES and not isinstance(out, tuple | list | dict):
        return out
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        fields = {f.name: getattr(out, f.name) for f in dataclasses.fields(out)}
        return {k: plain_outputs(v, depth + 1, in_object=in_object) for k, v in fields.items()}
    if isinstance(out, tuple | list):
        return [plain_outputs(x, depth + 1, in_object=in_object) for x in out]
    if isinstance(out, dict):
        return {k: plain_outputs(v, depth + 1, in_object=in_object) for k, v in out.items()}
    if hasattr(out, "__dict__") and not isinstance(out, type | torch.nn.Module):
        fields = {k: v for k, v in vars(out).items() if not k.startswith("_")}
        if any(_holds_tensor(v) for v in fields.values()):
            return {k: plain_outputs(v, depth + 1, in_object=True) for k, v in fields.items()}
    return None if in_object else out


def _holds_tensor(x: Any, depth: int = 0) -> bool:
    import torch

    if isinstance(x, torch.Tensor):
        return True
    if depth > 6:
        return False
    if isinstance(x, tuple | list):
        return any(_holds_tensor(v, depth + 1) for v in x)
    if isinstance(x, dict):
        return any(_holds_tensor(v, depth + 1) for v in x.values())
    if hasattr(x, "__dict__") and not isinstance(x, type):
        return any(_holds_tensor(v, depth + 1) for k, v in vars(x).items() if k[:1] != "_")
    return False


def _output_meta(x: Any, ids: Ids) -> TensorMeta | None:
    import torch

    if isinstance(x, torch.Tensor):
        return ids.meta(x)
    if x is None or isinstance(x, bool | int | float | str):
        return None
    raise FrontendError(
        f"the model returned a {type(x).__name__}; outputs must be tensors, "
        "numbers or containers of them",
        code="E0503",
    )
