"""Capture a PyTorch program at ATen level, as eager PyTorch runs it.

Contract: ``ProgramSource -> TorchCapture``. A `TorchDispatchMode` records every
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
(`CaptureInfo.used_real_values`). Otherwise `FrontendError` E0505.

`replay_values` re-runs the program for real and returns the values the reference
path needs (constants, outputs of chosen calls), checking that the real run performs
the same calls as the capture (E0506 otherwise).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar.diagnostics import FrontendError
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
from solar.frontends.pytorch.composite import composite_calls
from solar.frontends.pytorch.loader import Instance, ProgramSource, instantiate, user_code
from solar.frontends.pytorch.meta_mode import MetaBlockedError, MetaMode, dynamo_import_deferred

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
    "replay_values",
    "to_numpy",
]

REAL_BUDGET_BYTES = 2 << 30
"""Largest inputs+parameters (bytes) the real-values fallback will allocate."""

_CONSTANT_VALUE_LIMIT = 1 << 24
"""Constants up to this many elements keep their value in the capture."""

_HOST_OPS = frozenset(
    {"aten._local_scalar_dense.default", "aten.equal.default", "aten.is_nonzero.default"}
)


class _Ids:
    """Stable ids for tensor objects and storages."""

    def __init__(self) -> None:
        import torch.utils.weak as weak

        self._ids: Any = weak.WeakIdKeyDictionary()
        self._storages: dict[Any, int] = {}
        self.next = 0

    def known(self, t: Any) -> bool:
        return t in self._ids

    def get(self, t: Any) -> int:
        if t not in self._ids:
            self._ids[t] = self.next
            self.next += 1
        return int(self._ids[t])

    def meta(self, t: Any) -> TensorMeta:
        from torch.multiprocessing.reductions import StorageWeakRef

        try:
            key = StorageWeakRef(t.untyped_storage())  # type: ignore[no-untyped-call]
            sid = self._storages.setdefault(key, len(self._storages))
        except (RuntimeError, NotImplementedError):
            sid = -1
        return TensorMeta(
            self.get(t),
            tuple(int(d) for d in t.shape),
            str(t.dtype).removeprefix("torch."),
            tuple(int(s) for s in t.stride()),
            int(t.storage_offset()),
            sid,
        )


def _call_kind(func: Any) -> tuple[CallKind, tuple[int, ...]]:
    schema = func._schema
    written = tuple(
        k
        for k, a in enumerate(schema.arguments)
        if a.alias_info is not None and a.alias_info.is_write
    )
    if written:
        is_out = any(schema.arguments[k].is_out for k in written)
        return ("out" if is_out else "inplace"), written
    rets = schema.returns
    if rets and rets[0].alias_info is not None:
        return "view", ()
    return "functional", ()


class _Recorder:
    """The dispatch mode body; built lazily so torch is imported only when capturing."""

    def __init__(
        self,
        ids: _Ids,
        attr_names: Mapping[int, str],
        keep: frozenset[int],
        expect: tuple[str, ...] | None,
    ) -> None:
        self.ids = ids
        self.attr_names = attr_names
        self.keep = keep
        self.expect = expect
        self.calls: list[RecordedCall] = []
        self.constants: list[NamedTensor] = []
        self.constant_sites: list[tuple[int, int]] = []
        self.kept: dict[int, tuple[np.ndarray | None, ...]] = {}
        self.module_stack: list[str] = []
        self.suspended = False  # composite.py makes a whole call's outputs unrecorded

    def convert(self, a: Any, index: int) -> Any:
        import torch

        if isinstance(a, torch.Tensor):
            if not self.ids.known(a):
                self._new_constant(a, index)
            return TensorArg(self.ids.get(a))
        if isinstance(a, list | tuple):
            return tuple(self.convert(x, index) for x in a)
        if isinstance(a, torch.dtype):
            return str(a).removeprefix("torch.")
        if isinstance(a, torch.device):
            return "cpu" if a.type == "meta" else str(a)  # a meta capture stands for CPU
        if isinstance(a, torch.layout | torch.memory_format):
            return str(a)
        if isinstance(a, bool | int | float | str) or a is None:
            return a
        return repr(a)

    def _new_constant(self, t: Any, index: int) -> None:
        from torch._subclasses.fake_tensor import FakeTensor

        meta = self.ids.meta(t)
        name = self.attr_names.get(id(t), f"c{len(self.constants)}")
        value = None
        if (
            not isinstance(t, FakeTensor)
            and t.device.type != "meta"
            and t.numel() <= _CONSTANT_VALUE_LIMIT
        ):
            value = to_numpy(t)
        self.constants.append(NamedTensor(name, meta, value))
        self.constant_sites.append((index, meta.id))

    def record(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        import torch
        from torch.utils._pytree import tree_flatten

        target = str(func)
        leaves, _ = tree_flatten(out)
        has_tensor = any(isinstance(x, torch.Tensor) for x in leaves)
        if not has_tensor and target not in _HOST_OPS:
            return
        index = len(self.calls)
        if self.expect is not None and (index >= len(self.expect) or self.expect[index] != target):
            expected = self.expect[index] if index < len(self.expect) else "end of program"
            raise FrontendError(
                f"the real run diverged from the capture at call {index}: {target} "
                f"instead of {expected}",
                code="E0506",
                notes=("the program's control flow depends on tensor values",),
            )
        kind, written = _call_kind(func)
        if not has_tensor:
            kind = "host"
        cargs = tuple(self.convert(a, index) for a in args)
        ckwargs = {k: self.convert(v, index) for k, v in kwargs.items()}
        mutated: list[int] = []
        for pos in written:
            arg = func._schema.arguments[pos]
            val = kwargs.get(arg.name) if arg.kwarg_only or pos >= len(args) else args[pos]
            if isinstance(val, torch.Tensor):
                mutated.append(self.ids.get(val))
        outs = tuple(self.ids.meta(x) if isinstance(x, torch.Tensor) else None for x in leaves)
        if index in self.keep:
            self.kept[index] = tuple(
                to_numpy(x) if isinstance(x, torch.Tensor) else None for x in leaves
            )
        path = self.module_stack[-1] if self.module_stack else ""
        self.calls.append(
            RecordedCall(index, target, cargs, ckwargs, outs, kind, tuple(mutated), path)
        )


@contextlib.contextmanager
def _recording(rec: _Recorder, root: Any) -> Iterator[None]:
    """Push the dispatch mode and the module-path hooks."""
    import torch
    from torch.nn.modules import module as nn_module
    from torch.utils._python_dispatch import TorchDispatchMode

    names: dict[int, str] = {}
    if isinstance(root, torch.nn.Module):
        names = {id(m): n for n, m in root.named_modules(remove_duplicate=False)}

    def pre_hook(mod: Any, _args: Any) -> None:
        name = names.get(id(mod), type(mod).__name__.lower())
        rec.module_stack.append(name)

    def post_hook(_mod: Any, _args: Any, _out: Any) -> None:
        if rec.module_stack:
            rec.module_stack.pop()

    class Mode(TorchDispatchMode):  # type: ignore[no-untyped-call]
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # Eager capture never runs under torch.compile; wrapping the hook in
            # ``torch._disable_dynamo`` would import torch._dynamo (about a second).
            return False

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if not rec.suspended:
                rec.record(func, tuple(args), dict(kwargs), out)
            return out

    h1 = nn_module.register_module_forward_pre_hook(pre_hook)
    h2 = nn_module.register_module_forward_hook(post_hook, always_call=True)
    try:
        with Mode(), composite_calls(rec):  # type: ignore[no-untyped-call]
            yield
    finally:
        h1.remove()
        h2.remove()


def _tensor_bytes(xs: Any) -> int:
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(xs)
    return sum(x.numel() * x.element_size() for x in leaves if isinstance(x, torch.Tensor))


def _run(inst: Instance, rec: _Recorder, fake_mode: Any) -> Any:
    import torch

    ctx = fake_mode if fake_mode is not None else contextlib.nullcontext()
    watch = fake_mode.watch() if isinstance(fake_mode, MetaMode) else contextlib.nullcontext()
    with (
        torch.no_grad(),
        ctx,
        _recording(rec, inst.module),
        watch,
        user_code("the model's forward"),
    ):
        return inst.fn(*inst.args)


def _register(
    inst: Instance, ids: _Ids
) -> tuple[tuple[TensorMeta | None, ...], tuple[NamedTensor, ...]]:
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(list(inst.args))
    inputs = tuple(ids.meta(x) if isinstance(x, torch.Tensor) else None for x in leaves)
    params = tuple(NamedTensor(k, ids.meta(v)) for k, v in inst.state.items())
    return inputs, params


def _fake_blocked_errors() -> tuple[type[BaseException], ...]:
    from torch._subclasses import fake_tensor as ft

    return (
        ft.DataDependentOutputException,
        ft.DynamicOutputShapeException,
        ft.UnsupportedOperatorException,
    )


def capture_program(source: ProgramSource, *, real: bool = False) -> TorchCapture:
    """Capture ``source`` at ATen level (fake tensors unless ``real`` or forced).

    Args:
        source: the program.
        real: capture with real tensors from the start.

    Returns:
        The capture.

    Raises:
        FrontendError: loading/running errors (E0501-E0504), E0505 when real values are
            needed but inputs+parameters exceed `REAL_BUDGET_BYTES`.
    """
    reason = "requested" if real else None
    if not real:
        meta = _capture_on_meta(source)
        if meta is not None:
            return meta
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        with _quiet_fake_tensors():
            inst = instantiate(source, fake_mode=fake_mode)
        try:
            with _quiet_fake_tensors():
                return _finish(source, inst, fake_mode, None)
        except FrontendError as err:
            cause = err.__cause__
            if err.code != "E0501" or cause is None:
                raise
            blocked = isinstance(cause, _fake_blocked_errors())
            need = _tensor_bytes(inst.args) + _tensor_bytes(list(inst.state.values()))
            if need > REAL_BUDGET_BYTES:
                if not blocked:
                    raise
                raise FrontendError(
                    "the program needs real tensor values (data-dependent op), but its "
                    f"inputs and parameters take {need / 2**30:.1f} GiB",
                    code="E0505",
                    notes=(
                        f"fake execution stopped at: {cause}",
                        "reduce the sizes in the model file",
                    ),
                ) from err
            reason = f"{type(cause).__name__}: {cause}".splitlines()[0]
    inst = instantiate(source)
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


_META_ERRORS = (RuntimeError, NotImplementedError, TypeError, ValueError, AttributeError)
"""What meta execution raises for what it cannot do (besides user-code `FrontendError` E0501)."""


def _capture_on_meta(source: ProgramSource) -> TorchCapture | None:
    """The capture on the meta device, or ``None`` when meta execution cannot run it.

    Any failure (including a genuine error in the user's code, which the fake-tensor
    run then reports) returns ``None``; nothing is built for real here.
    """
    mode = MetaMode()
    try:
        with dynamo_import_deferred():
            inst = instantiate(source, fake_mode=mode, real_fallback=False)
            capture = _finish(source, inst, mode, None)
    except FrontendError as err:
        if err.code != "E0501":
            raise
        return None
    except (MetaBlockedError, *_META_ERRORS):
        return None
    return capture if mode.blocked is None else None


def _finish(
    source: ProgramSource, inst: Instance, fake_mode: Any, reason: str | None
) -> TorchCapture:
    from torch.utils._pytree import tree_flatten

    ids = _Ids()
    inputs, params = _register(inst, ids)
    rec = _Recorder(ids, inst.attr_names, frozenset(), None)
    out = _run(inst, rec, fake_mode)
    leaves, _ = tree_flatten(out)
    outputs = tuple(_output_meta(x, ids) for x in leaves)
    info = CaptureInfo(
        used_real_values=fake_mode is None,
        real_reason=reason,
        input_bytes=_tensor_bytes(inst.args),
        param_bytes=_tensor_bytes(list(inst.state.values())),
        sizes=dict(inst.sizes),
        num_calls=len(rec.calls),
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


def _output_meta(x: Any, ids: _Ids) -> TensorMeta | None:
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


@dataclass(frozen=True, slots=True)
class RealValues:
    """Values of a real run, keyed to a capture.

    Attributes:
        inputs: flattened input leaves (numpy for tensors, ``None`` otherwise), before
            the program ran (so in-place mutation does not leak in).
        params: parameter/buffer values by state_dict name.
        constants: constant values by constant name.
        outputs: flattened output leaves.
        kept: outputs of the requested calls, by call index.
    """

    inputs: tuple[np.ndarray | None, ...]
    params: Mapping[str, np.ndarray]
    constants: Mapping[str, np.ndarray]
    outputs: tuple[np.ndarray | None, ...]
    kept: Mapping[int, tuple[np.ndarray | None, ...]]


def replay_values(capture: TorchCapture, *, keep: frozenset[int] = frozenset()) -> RealValues:
    """Run the captured program for real (seeded) and collect reference values.

    Args:
        capture: the capture to replay; its source is rebuilt with real tensors.
        keep: call indices whose outputs to return.

    Returns:
        The values, keyed as the capture names them.

    Raises:
        FrontendError: E0506 if the real run performs different calls.
    """
    import torch
    from torch.utils._pytree import tree_flatten

    inst = instantiate(capture.source)
    leaves, _ = tree_flatten(list(inst.args))
    inputs = tuple(to_numpy(x) if isinstance(x, torch.Tensor) else None for x in leaves)
    params = {k: to_numpy(v) for k, v in inst.state.items()}
    ids = _Ids()
    _register(inst, ids)
    rec = _Recorder(ids, inst.attr_names, keep, tuple(c.target for c in capture.calls))
    out = _run(inst, rec, None)
    if len(rec.calls) != len(capture.calls):
        raise FrontendError(
            f"the real run made {len(rec.calls)} calls, the capture {len(capture.calls)}",
            code="E0506",
        )
    out_leaves, _ = tree_flatten(out)
    outputs = tuple(to_numpy(x) if isinstance(x, torch.Tensor) else None for x in out_leaves)
    constants: dict[str, np.ndarray] = {}
    for cap_const, real_const in zip(capture.constants, rec.constants, strict=False):
        if real_const.value is not None:
            constants[cap_const.name] = real_const.value
    return RealValues(inputs, params, constants, outputs, rec.kept)
