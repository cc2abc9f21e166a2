"""The recorder under a PyTorch capture: a dispatch mode that records each ATen call.

Contract: ``Instance -> list[RecordedCall]`` through `run_recorded`. `Recorder` is the
`TorchDispatchMode` body (`recording` pushes it with the module-path hooks): every ATen
call that eager execution dispatches (one call = one kernel launch) becomes a
`RecordedCall`, with tensors replaced by stable integer ids (`Ids`). Both the capture
(capture.py, on meta or fake tensors) and the real replay (replay.py) run the program
under it; Note [Independent FLOP count] in capture.py says what ``count_flops`` adds.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
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
    NamedTensor,
    RecordedCall,
    TensorArg,
    TensorMeta,
    to_numpy,
)
from solar.frontends.pytorch.composite import composite_calls
from solar.frontends.pytorch.flops import CORRECTED_FORMULAS, EXTRA_FORMULAS, padding_flops
from solar.frontends.pytorch.loader import Instance, user_code
from solar.frontends.pytorch.meta_mode import MetaMode

__all__ = ["Ids", "Recorder", "register_tensors", "run_recorded", "setting", "tensor_bytes"]


_CONSTANT_VALUE_LIMIT = 1 << 24
"""Constants up to this many elements keep their value in the capture."""

_HOST_OPS = frozenset(
    {"aten._local_scalar_dense.default", "aten.equal.default", "aten.is_nonzero.default"}
)


class Ids:
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


def _check_dense(target: str, leaves: Sequence[Any]) -> None:
    """Refuse an op that makes a tensor the IR cannot represent: sparse, quantized or
    nested (its sizes, strides and storage are not those of a dense array).

    Raises:
        FrontendError: E0510.
    """
    import torch

    for x in leaves:
        if isinstance(x, torch.Tensor) and (
            x.is_nested or x.is_quantized or x.layout != torch.strided
        ):
            kind = "nested" if x.is_nested else "quantized" if x.is_quantized else str(x.layout)
            raise FrontendError(
                f"`{target}` makes a {kind.removeprefix('torch.')} tensor, which the IR "
                "cannot represent (it holds dense, strided tensors)",
                code="E0510",
                notes=("analyse the program on dense tensors (.to_dense(), .dequantize())",),
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


class Recorder:
    """The dispatch mode body; built lazily so torch is imported only when capturing."""

    def __init__(
        self,
        ids: Ids,
        attr_names: Mapping[int, str],
        keep: frozenset[int],
        expect: tuple[str, ...] | None,
    ) -> None:
        self.ids = ids
        self.attr_names = attr_names
        self.keep = keep
        self.expect = expect
        # a kept call by (target, occurrence): still found after a divergence
        self.keep_sites = occurrences(expect or (), keep)
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

        name = func._overloadpacket.__name__
        # Note [Grouped convolution backward], Note [Counter gaps] in flops.py
        formula = (CORRECTED_FORMULAS.get(name) or flop_registry.get(func._overloadpacket)
                   or EXTRA_FORMULAS.get(name))
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
        _check_dense(target, leaves)
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
                user_source(),
            )
        )


# Note [Kernel sources]
# ~~~~~~~~~~~~~~~~~~~~~
# Each recorded call keeps the user's source line that made it (`RecordedCall.source`,
# the report's ``kernels[].source``): the innermost Python frame on the stack whose file
# is not part of torch, SOLAR (its dispatch and function modes sit between torch's
# frames) or the standard library (``model.py:42``; a library such as transformers
# counts as the user's code). The walk stops at `Instance.call`, where SOLAR calls the
# program: frames further out are SOLAR's callers (the CLI, a test), not the program.
# Only the code object's file name and the frame's line are read, walking
# ``sys._getframe``: no traceback is formatted. A call no user frame made (autograd's
# backward, run from SOLAR's training step) has none.
@functools.cache
def _internal_prefixes() -> tuple[str, ...]:
    """The directories of SOLAR, torch and the standard library, and ``<``."""
    import sysconfig

    import torch

    solar = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return (
        solar + os.sep,  # this file is solar/frontends/pytorch/recorder.py
        os.path.dirname(torch.__file__ or "") + os.sep,
        sysconfig.get_paths()["stdlib"] + os.sep,
        "<",  # <frozen importlib._bootstrap>, <string>
    )


def user_source() -> str:
    """``file.py:line`` of the innermost user frame on the stack, or ``""`` (Note
    [Kernel sources])."""
    skipped = _internal_prefixes()
    entry = Instance.call.__code__
    frame: Any = sys._getframe(1)
    while frame is not None and frame.f_code is not entry:
        name = frame.f_code.co_filename
        if not name.startswith(skipped):
            return f"{os.path.basename(name)}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


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
def _recording(rec: Recorder, root: Any, *, composites: bool = True) -> Iterator[None]:
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


def tensor_bytes(xs: Any) -> int:
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(xs)
    return sum(x.numel() * x.element_size() for x in leaves if isinstance(x, torch.Tensor))


# Note [No fused fast path]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# In eval mode, `nn.TransformerEncoderLayer` and `nn.MultiheadAttention` take torch's
# "fast path": one opaque ATen call per layer (``_transformer_encoder_layer_fwd``,
# ``_native_multi_head_attention``) that torch's FLOP counter has no formula for, while
# training mode runs the same math as its kernels (linear, attention, layer norm, ...).
# The program runs with the fast path off (`torch.backends.mha.set_fastpath_enabled`)
# during both the capture and the real replay, so eval and ``--train-mode`` give the same
# kernels and the FLOP check counts them. The fast path computes the same function (the
# same weights, the same formulas; only the kernel boundaries and rounding differ), so
# the reference the replay gives is the model's own output, up to rounding.


@contextlib.contextmanager
def setting(get: Callable[[], Any], put: Callable[[Any], None], value: Any) -> Iterator[None]:
    """A global torch setting (read by ``get``, written by ``put``) at ``value``
    meanwhile, restored after; ``value`` ``None`` leaves it as it is."""
    if value is None:
        yield
        return
    before = get()
    put(value)
    try:
        yield
    finally:
        put(before)


def _no_fused_fast_path() -> contextlib.AbstractContextManager[None]:
    """Note [No fused fast path]: torch's fused MHA fast path off meanwhile."""
    import torch

    mha = torch.backends.mha
    return setting(mha.get_fastpath_enabled, mha.set_fastpath_enabled, False)


def run_recorded(inst: Instance, rec: Recorder, fake_mode: Any) -> Any:
    import torch

    ctx = fake_mode if fake_mode is not None else contextlib.nullcontext()
    watch = fake_mode.watch() if isinstance(fake_mode, MetaMode) else contextlib.nullcontext()
    with (
        torch.no_grad(),  # a training step enables grad itself (train_step.py)
        _no_fused_fast_path(),
        ctx,
        # a training step differentiates through the RNN's per-step ops: no whole-call record
        _recording(rec, inst.module, composites=not hasattr(inst.fn, "solar_train_step")),
        watch,
        user_code("the model's forward"),
    ):
        return inst.call()


def register_tensors(
    inst: Instance, ids: Ids
) -> tuple[tuple[TensorMeta | None, ...], tuple[NamedTensor, ...]]:
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(inst.input_tree())
    inputs = tuple(ids.meta(x) if isinstance(x, torch.Tensor) else None for x in leaves)
    params = tuple(NamedTensor(k, ids.meta(local_shard(v))) for k, v in inst.state.items())
    return inputs, params


def occurrences(targets: Sequence[str], keep: frozenset[int]) -> dict[tuple[str, int], int]:
    """``(target, k) -> index`` of each kept call, the ``k``-th call of its target.

    >>> occurrences(("a", "b", "a", "a"), frozenset({2, 3}))
    {('a', 1): 2, ('a', 2): 3}
    """
    seen: dict[str, int] = {}
    sites: dict[tuple[str, int], int] = {}
    for index, target in enumerate(targets):
        if index in keep:
            sites[(target, seen.get(target, 0))] = index
        seen[target] = seen.get(target, 0) + 1
    return sites
