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

`replay_values` re-runs the program for real and returns the values the reference
path needs (constants, outputs of chosen calls), checking that the real run performs
the same calls as the capture (E0506 otherwise).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.pytorch.capture_dist import (
    P2P_OPS,
    has_dtensor,
    local_shard,
    p2p_outputs,
    script_object_arg,
)
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
from solar.frontends.pytorch.flops import EXTRA_FORMULAS, padding_flops
from solar.frontends.pytorch.loader import (
    REAL_BUDGET_BYTES,
    Instance,
    ProgramSource,
    instantiate,
    meta_to_fake,
    user_code,
)
from solar.frontends.pytorch.meta_mode import MetaBlockedError, MetaMode, dynamo_import_deferred
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
    "replay_values",
    "to_numpy",
]


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
            # The weak reference is taken before any StorageWeakRef exists: one whose
            # ``__init__`` raised is still finalised, and its ``__del__`` then prints
            # "Exception ignored ... no attribute '_free_weak_ref'" at exit.
            cdata = t.untyped_storage()._weak_ref()
            key = StorageWeakRef.from_weakref(cdata)  # type: ignore[no-untyped-call]
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
        # a kept call by (target, occurrence): still found after a divergence
        self.keep_sites = _occurrences(expect or (), keep)
        self.seen: dict[str, int] = {}
        self.calls: list[RecordedCall] = []
        self.constants: list[NamedTensor] = []
        self.constant_sites: list[tuple[int, int]] = []
        self.kept: dict[int, tuple[np.ndarray | None, ...]] = {}
        self.module_stack: list[str] = []
        self.suspended = False  # composite.py makes a whole call's outputs unrecorded
        self.diverged: str | None = None
        self.count_flops = False  # Note [Independent FLOP count]

    def counted_flops(self, func: Any, args: Any, kwargs: Any, out: Any) -> int | None:
        """torch's FLOPs for this call, ``None`` without a formula (or not counting)."""
        if not self.count_flops:
            return None
        from torch.utils.flop_counter import flop_registry

        formula = flop_registry.get(func._overloadpacket) or EXTRA_FORMULAS.get(
            func._overloadpacket.__name__
        )  # Note [Counter gaps] in flops.py
        return None if formula is None else int(formula(*args, **kwargs, out_val=out))

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
        if isinstance(a, torch.ScriptObject):
            return script_object_arg(a)
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
        if target in P2P_OPS:  # Note [Point-to-point capture]
            leaves = p2p_outputs(target, args)
        has_tensor = any(isinstance(x, torch.Tensor) for x in leaves)
        if not has_tensor and target not in _HOST_OPS and target not in P2P_OPS:
            return
        index = len(self.calls)
        if self.expect is not None and (index >= len(self.expect) or self.expect[index] != target):
            expected = self.expect[index] if index < len(self.expect) else "end of program"
            self.diverged = f"at call {index}: {target} instead of {expected}"
            self.expect = None
        kind, written = _call_kind(func)
        if target in P2P_OPS:
            kind, written = "functional", ()
        elif not has_tensor:
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
        occurrence = self.seen.get(target, 0)
        self.seen[target] = occurrence + 1
        site = self.keep_sites.get((target, occurrence))
        if site is not None:
            self.kept[site] = tuple(
                to_numpy(x) if isinstance(x, torch.Tensor) else None for x in leaves
            )
        path = self.module_stack[-1] if self.module_stack else ""
        counted = self.counted_flops(func, args, kwargs, out)
        padding = 0
        if counted:
            shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args]
            padding = padding_flops(func._overloadpacket.__name__, shapes, counted)
        self.calls.append(
            RecordedCall(
                index,
                target,
                cargs,
                ckwargs,
                outs,
                kind,
                tuple(mutated),
                path,
                counted,
                padding,
            )
        )


# Note [No-op restrides]
# ~~~~~~~~~~~~~~~~~~~~~~
# CPU kernels restride some fresh outputs in place (``as_strided_`` after a reduction
# over a channels-last tensor, to give the ``(N, C, 1, 1)`` result channels-last
# strides), and whether they do differs between the real, fake and meta kernels. Such a
# call changes only the strides of size-1 dims: every element stays where it was. It is
# not recorded, so the capture and the real replay see the same calls (else the replay
# stops with E0506 "control flow depends on tensor values", as timm's ConvNeXt did).
_RESTRIDES: set[Any] = set()


def _layout(t: Any) -> tuple[tuple[int, ...], tuple[int, ...], int] | None:
    import torch

    if not isinstance(t, torch.Tensor):
        return None
    return tuple(t.shape), tuple(t.stride()), int(t.storage_offset())


def _same_elements(
    a: tuple[tuple[int, ...], tuple[int, ...], int] | None,
    b: tuple[tuple[int, ...], tuple[int, ...], int] | None,
) -> bool:
    """Same shape and offset, and the same strides on every dim of size > 1.

    >>> _same_elements(((1, 8, 1, 1), (8, 1, 1, 1), 0), ((1, 8, 1, 1), (8, 1, 8, 8), 0))
    True
    >>> _same_elements(((2, 4), (4, 1), 0), ((2, 4), (1, 2), 0))
    False
    """
    if a is None or b is None or a[0] != b[0] or a[2] != b[2]:
        return False
    return all(n == 1 or s == t for n, s, t in zip(a[0], a[1], b[1], strict=True))


@contextlib.contextmanager
def _recording(rec: _Recorder, root: Any, *, composites: bool = True) -> Iterator[None]:
    """Push the dispatch mode and the module-path hooks, record circular pads whole and,
    with ``composites``, whole RNN calls (composite.py)."""
    import torch
    from torch.nn.modules import module as nn_module
    from torch.utils._python_dispatch import TorchDispatchMode

    if not _RESTRIDES:
        _RESTRIDES.add(torch.ops.aten.as_strided_.default)
    names: dict[int, str] = {}
    if isinstance(root, torch.nn.Module):
        names = {id(m): n for n, m in root.named_modules(remove_duplicate=False)}

    def pre_hook(mod: Any, _args: Any) -> None:
        if not rec.module_stack and id(mod) not in names and not getattr(mod, "solar_phase", False):
            # An entry function calling a module: name its submodules from that module,
            # as a model file's `Model` is, so kernel names agree across the CLI, --entry
            # and the Python API (`qkv_addmm`, not `linear_addmm`).
            names.update(
                (id(m), n)
                for n, m in mod.named_modules(remove_duplicate=False)
                if id(m) not in names
            )
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
            if has_dtensor(args, kwargs):  # Note [DTensor capture]
                return NotImplemented
            before = _layout(args[0]) if func in _RESTRIDES and args else None
            out = func(*args, **kwargs)
            if before is not None and _same_elements(before, _layout(args[0])):
                return out  # Note [No-op restrides]
            if not rec.suspended:
                rec.record(func, tuple(args), dict(kwargs), out)
            return out

    h1 = nn_module.register_module_forward_pre_hook(pre_hook)
    h2 = nn_module.register_module_forward_hook(post_hook, always_call=True)
    try:
        with Mode(), composite_calls(rec, rnns=composites):  # type: ignore[no-untyped-call]
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
        torch.no_grad(),  # a training step enables grad itself (train_step.py)
        ctx,
        # a training step differentiates through the RNN's per-step ops: no whole-call record
        _recording(rec, inst.module, composites=not hasattr(inst.fn, "solar_train_step")),
        watch,
        user_code("the model's forward"),
    ):
        return inst.call()


def _register(
    inst: Instance, ids: _Ids
) -> tuple[tuple[TensorMeta | None, ...], tuple[NamedTensor, ...]]:
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(inst.input_tree())
    inputs = tuple(ids.meta(x) if isinstance(x, torch.Tensor) else None for x in leaves)
    params = tuple(NamedTensor(k, ids.meta(local_shard(v))) for k, v in inst.state.items())
    return inputs, params



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
    """Capture ``source`` at ATen level (fake tensors unless ``real`` or forced).

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
            need = _tensor_bytes(inst.input_tree()) + _tensor_bytes(list(inst.state.values()))
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
            raise _not_on_meta(source, str(err)) from err
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

    ids = _Ids()
    inputs, params = _register(inst, ids)
    rec = _Recorder(ids, inst.attr_names, frozenset(), None)
    rec.count_flops = True
    out = _run(inst, rec, fake_mode)
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
        input_bytes=_tensor_bytes(inst.input_tree()),
        param_bytes=_tensor_bytes(list(inst.state.values())),
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


# Note [Diverging replay]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A program may branch on tensor values, or on whether it is being traced (transformers
# builds its attention masks one way under FakeTensors and another way in eager). The
# capture then holds the branch the capture took, and the real replay takes another.
# When no intermediate value is needed by call position (no uncovered or captured op),
# the replay goes on: the inputs, parameters and outputs are keyed by name and position
# in the program's interface, so validation still compares the IR's outputs with the
# real program's, end to end; constants lifted after the divergence are matched by
# shape and dtype, and a mismatch shows up as a failed validation, never a silent pass.
# Values needed by call position (a random draw, an uncovered op's outputs) are kept by
# op and occurrence (the k-th ``bernoulli_`` of the real run is the k-th of the
# capture): identical to the call index while the runs agree, and still found after
# the divergence (a transformers model in training mode: its mask is built differently,
# its dropout draws are the same). A kept call the real run never made, or made with
# other shapes, is E0506. The report notes the divergence (`RealValues.diverged`).


def _occurrences(targets: Sequence[str], keep: frozenset[int]) -> dict[tuple[str, int], int]:
    """``(target, k) -> index`` of each kept call, the ``k``-th call of its target.

    >>> _occurrences(("a", "b", "a", "a"), frozenset({2, 3}))
    {('a', 1): 2, ('a', 2): 3}
    """
    seen: dict[str, int] = {}
    sites: dict[tuple[str, int], int] = {}
    for index, target in enumerate(targets):
        if index in keep:
            sites[(target, seen.get(target, 0))] = index
        seen[target] = seen.get(target, 0) + 1
    return sites


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
        diverged: where the real run left the captured call sequence (Note [Diverging
            replay]), or ``None``.
    """

    inputs: tuple[np.ndarray | None, ...]
    params: Mapping[str, np.ndarray]
    constants: Mapping[str, np.ndarray]
    outputs: tuple[np.ndarray | None, ...]
    kept: Mapping[int, tuple[np.ndarray | None, ...]]
    diverged: str | None = None


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
    leaves, _ = tree_flatten(inst.input_tree())
    inputs = tuple(to_numpy(x) if isinstance(x, torch.Tensor) else None for x in leaves)
    params = {k: to_numpy(v) for k, v in inst.state.items()}
    ids = _Ids()
    _register(inst, ids)
    rec = _Recorder(ids, inst.attr_names, keep, tuple(c.target for c in capture.calls))
    with _default_dtype(torch.float64 if capture.source.float64 else None):
        out = _run(inst, rec, None)
    if rec.diverged is None and len(rec.calls) != len(capture.calls):
        raise FrontendError(
            f"the real run made {len(rec.calls)} calls, the capture {len(capture.calls)}",
            code="E0506",
        )
    _check_kept(capture, keep, rec)
    out_leaves, _ = tree_flatten(plain_outputs(out))
    outputs = tuple(to_numpy(x) if isinstance(x, torch.Tensor) else None for x in out_leaves)
    constants: dict[str, np.ndarray] = {}
    if rec.diverged is None:
        pairs = list(zip(capture.constants, rec.constants, strict=False))
    else:
        pairs = _match_constants(capture.constants, rec.constants)
    for cap_const, real_const in pairs:
        if real_const.value is not None:
            constants[cap_const.name] = real_const.value
    return RealValues(inputs, params, constants, outputs, rec.kept, rec.diverged)


@contextlib.contextmanager
def _default_dtype(dtype: Any) -> Iterator[None]:
    """``dtype`` as torch's default floating type meanwhile (``None``: unchanged): a
    float64 replay's own factories (``torch.zeros(n)`` in a forward) make float64."""
    import torch

    if dtype is None:
        yield
        return
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def _check_kept(capture: TorchCapture, keep: frozenset[int], rec: _Recorder) -> None:
    """E0506 unless the real run made every kept call, with the captured shapes."""
    for index in sorted(keep):
        values = rec.kept.get(index)
        call = capture.calls[index]
        shapes = [m.shape if m is not None else None for m in call.outputs]
        got = [tuple(v.shape) if v is not None else None for v in values or ()]
        if values is None or any(
            s is not None and g is not None and tuple(s) != g
            for s, g in zip(shapes, got, strict=False)
        ):
            raise FrontendError(
                f"the real run diverged from the capture {rec.diverged or ''}, and call {index} "
                f"({call.target}), whose values the program needs, "
                + ("never ran" if values is None else f"made shapes {got}, not {shapes}"),
                code="E0506",
                notes=("the program's control flow depends on tensor values",),
            )


def _match_constants(
    captured: Sequence[NamedTensor], real: Sequence[NamedTensor]
) -> list[tuple[NamedTensor, NamedTensor]]:
    """Pair each captured constant with the next unused real one of its shape and dtype."""
    used: set[int] = set()
    pairs = []
    for c in captured:
        for k, r in enumerate(real):
            if k not in used and (r.meta.shape, r.meta.dtype) == (c.meta.shape, c.meta.dtype):
                used.add(k)
                pairs.append((c, r))
                break
    return pairs
