"""Lower a `TorchCapture` to an Affine Loop IR `Program`, one kernel per ATen call.

Contract: ``TorchCapture -> LoweredProgram`` (the kit's). Every recorded call is either
lowered by its registered lowering (registry.py), spliced from ``op_fallback``, or
uncovered through the kit's `LoweringDriver`: what its lowering emitted is rolled back,
it is reported in `LoweredProgram.coverage` with its count and share of the program's
tensor bytes, the tensors it reads are kept alive (`LoweredProgram.keep_alive`), and its
output tensors become extra program ``input``s (named ``u<call>_<op>``), so every
downstream kernel is still lowered and can be validated by feeding the real
intermediate values (see reference.py). An uncovered op is never dropped.

Naming (`solar.frontends.kit.naming`): ``x0, x1, ...`` are the tensor leaves of the
program inputs in order, ``p_<state_dict key>`` parameters/buffers, ``p_<attr>``/``c<k>``
other constant tensors, ``y0, y1, ...`` the tensor outputs, ``t<call>_<op>`` temps;
kernels are named ``<module path>_<op>``.

Aliasing: view ops are free (no kernel); their values read their storage through
index maps. An in-place op that overwrites every element of a tensor (``add_``,
``relu_``, ``copy_`` into a whole tensor) produces a new version of the storage (a new
temp) that later reads use; scatter-like in-place ops (``index_put_``...) and in-place
ops on a part of a tensor (``x[:, 0] = v``) write into the existing tensor, as eager
does, so no untouched element is charged. Inputs/parameters written in place are
listed in `LoweredProgram.mutated`. An output that eager returns as a view or alias
(of an input, a parameter, an intermediate or another output: ``return x.t()``,
``return y, y``) is written by an alias kernel ``y<k>_copy`` after every other
kernel: validation runs it, the bounds charge nothing for it.

Error codes: E0510 a tensor has a dtype the IR cannot represent; E0512 the capture
references an unknown tensor, or an interface name clashes (internal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from solar.diagnostics import FrontendError
from solar.frontends.kit import (
    IR_DTYPES,
    BuilderKernels,
    LowerCtx,
    LoweredProgram,
    LoweringDriver,
    TensorInfo,
    TensorRef,
    Unsupported,
    UnsupportedOpError,
    input_name,
    output_name,
    param_name,
    sanitize_name,
    shape_numel,
    uncovered_name,
)
from solar.frontends.kit.outputs import write_empty_outputs
from solar.frontends.pytorch.capture_types import (
    NamedTensor,
    RecordedCall,
    TensorArg,
    TensorMeta,
    TorchCapture,
    flat_values,
    functional_target,
    op_name,
    tensor_args,
)
from solar.frontends.pytorch.drawn import ORDER_OPS, RANDOM_OPS, emit_drawn
from solar.frontends.pytorch.ir_edits import (
    aliases_last,
    emit_copy,
    prune_unused,
    rename_tensors,
    splice_program,
)
from solar.frontends.pytorch.registry import LOWERINGS, LoweringFn, OpCall, OpFallback
from solar.ir import DType, Role

__all__ = ["INPLACE_PARTIAL_OPS", "RANDOM_OPS", "ir_dtype", "lower_capture"]

INPLACE_PARTIAL_OPS = frozenset({
    "index_put_", "_index_put_impl_", "scatter_", "scatter_add_", "scatter_reduce_",
    "index_add_", "index_copy_", "index_fill_", "masked_fill_", "masked_scatter_", "put_",
    "fill_diagonal_",
})  # fmt: skip
"""In-place ops that write only some elements of ``self``: lowered as writes into the
existing tensor (their lowerings skip the copy of ``self`` when output is ``self``)."""

_RESHAPES = frozenset({
    "view", "_unsafe_view", "reshape", "squeeze", "unsqueeze", "flatten", "alias", "detach",
    "lift_fresh", "_reshape_alias",
})  # fmt: skip


class _Env(dict[int, TensorInfo]):
    """Tensor id -> current IR value, indexed by IR tensor name too.

    `_Lowerer.rebase` redirects every alias of a storage after an in-place op; with the
    reverse index that costs the aliases, not a scan of every tensor seen so far (which
    made a program of many in-place ops, like a GRU decomposed per step, quadratic).
    Only ``env[tid] = info`` writes (no deletion) are used.
    """

    def __init__(self) -> None:
        super().__init__()
        self.by_name: dict[str, set[int]] = {}

    def __setitem__(self, tid: int, info: TensorInfo) -> None:
        old = self.get(tid)
        if old is not None:
            self.by_name[old.ref.name].discard(tid)
        super().__setitem__(tid, info)
        self.by_name.setdefault(info.ref.name, set()).add(tid)


class _Lowerer(LoweringDriver):
    """Walks the calls of a capture, keeping the current IR value of each tensor id."""

    # A lowering raising NotImplementedError (an unfinished variant) uncovers the op too.
    unsupported = (UnsupportedOpError, NotImplementedError)

    def __init__(self, capture: TorchCapture, op_fallback: OpFallback | None) -> None:
        super().__init__(capture.name)
        self.capture = capture
        self.fallback = op_fallback
        self.env = _Env()
        self.roles: dict[str, str] = {}
        self.reshape_only: set[int] = set()
        self.mutated: list[str] = []
        self.metas: dict[int, TensorMeta] = {}
        self.layouts: dict[int, tuple[tuple[int, ...], int]] = {}  # id -> current strides, offset
        self.scalar_consts: dict[str, bool | int | float] = {}
        self.unrepresentable: dict[int, str] = {}
        self.generated: list[str] = []
        self.seen_locals: list[str] = []
        self._initial_names: dict[int, str] = {}
        for k in range(len(capture.outputs)):
            self.pb.unique(output_name(k))  # reserve y0.. for the outputs

    def declare_meta(
        self, role: Role, meta: TensorMeta, hint: str, *, exact: bool = False
    ) -> TensorInfo:
        """Declare the program-level tensor holding ``meta``'s values."""
        info = self.declare(role, ir_dtype(meta.dtype), meta.shape, hint, exact=exact)
        self.roles[info.ref.name] = role
        self.env[meta.id] = info
        self.metas[meta.id] = meta
        self.layouts[meta.id] = (meta.stride, meta.storage_offset)
        return info

    def representable(self, meta: TensorMeta) -> bool:
        """False (and remembered) for tensors of a dtype the IR lacks (uint8, int16...)."""
        if meta.dtype in IR_DTYPES:
            return True
        self.unrepresentable[meta.id] = meta.dtype
        return False

    def interface(self) -> None:
        cap = self.capture
        k = 0
        for meta in cap.inputs:
            if meta is not None:
                if self.representable(meta):
                    self.declare_meta("input", meta, input_name(k), exact=True)
                k += 1
        for nt in cap.params:
            if self.representable(nt.meta):
                self.declare_meta("param", nt.meta, param_name(nt.name))
        for nt in cap.constants:
            if not self.representable(nt.meta):
                continue
            hint = param_name(nt.name) if not nt.name[1:].isdigit() else nt.name
            info = self.declare_meta("param", nt.meta, hint)
            if nt.meta.shape == () and nt.value is not None and nt.meta.dtype in IR_DTYPES:
                # A 0-d literal (``x[:, 0] = 0.0`` lifts ``tensor(0.)``): inline its value.
                self.scalar_consts[info.ref.name] = nt.value.item()

    # -- argument conversion ---------------------------------------------------------
    def resolve(self, a: Any, *, inline: bool = True) -> Any:
        if isinstance(a, TensorArg):
            if a.id in self.unrepresentable:
                raise FrontendError(
                    f"reads a tensor of dtype {self.unrepresentable[a.id]}", code="E0510"
                )
            try:
                info = self.env[a.id]
            except KeyError:
                raise FrontendError(f"capture reads unknown tensor {a.id}", code="E0512") from None
            if inline and info.ref.name in self.scalar_consts:
                return self.scalar_consts[info.ref.name]
            return info
        if isinstance(a, tuple):
            return tuple(self.resolve(x, inline=inline) for x in a)
        if isinstance(a, str) and a in IR_DTYPES:
            return IR_DTYPES[a]
        return a

    def call_bytes(self, call: RecordedCall) -> int:
        if call.kind in ("view", "host"):
            return 0
        seen: dict[int, TensorMeta] = {}
        for a in tensor_args(call):
            if a.id in self.metas:
                seen[a.id] = self.metas[a.id]
        for m in call.outputs:
            if m is not None:
                seen[m.id] = m
        return sum(m.numel * _itemsize(m.dtype) for m in seen.values())

    # -- one call ------------------------------------------------------------------
    def lower_call(self, call: RecordedCall) -> None:
        nbytes = self.call_bytes(call)
        self.count(nbytes)
        if call.kind == "host":
            if call.target != "aten._local_scalar_dense.default":
                self.mark_uncovered(call, nbytes, "reads tensor data on the host")
            return
        if op_name(call.target) in RANDOM_OPS | ORDER_OPS and all(
            m is None or self.representable(m) for m in call.outputs
        ):
            self.lower_random(call)
            return
        target = functional_target(call)
        fn = LOWERINGS.find(target)
        try:
            outs = self.outputs_for(call)
            inline = call.kind != "view"
            args = tuple(self.resolve(a, inline=inline) for a in call.args)
            kwargs = {
                k: self.resolve(v, inline=inline) for k, v in call.kwargs.items() if k != "out"
            }
        except FrontendError as err:
            if err.code != "E0510":
                raise
            self.mark_uncovered(call, nbytes, err.message)
            return
        opcall = OpCall(
            target,
            args,
            kwargs,
            tuple(outs),
            out_shapes=tuple(m.shape if m is not None else None for m in call.outputs),
            out_dtypes=tuple(
                IR_DTYPES.get(m.dtype) if m is not None else None for m in call.outputs
            ),
            index=call.index,
            module_path=sanitize_name(call.module_path) if call.module_path else "",
            arg_layouts=tuple(
                self.layouts.get(a.id) if isinstance(a, TensorArg) else None for a in call.args
            ),
        )
        for m in call.outputs:  # `as_strided_` changes its tensor's layout in place
            if m is not None:
                self.layouts[m.id] = (m.stride, m.storage_offset)
        result = (
            self.attempt_lowering(fn, opcall, call, inline=inline)
            if fn is not None
            else Unsupported("no lowering")
        )
        if not isinstance(result, Unsupported):
            self.coverage.lowered += 1
            self.bind_outputs(call, outs, result)
        elif self.try_fallback(call, opcall):
            self.coverage.lowered += 1
        else:
            self.mark_uncovered(call, nbytes, result.reason or "unsupported variant")

    def lower_random(self, call: RecordedCall) -> None:
        """Each output copied from the real run's values (Note [Random ops])."""
        op = op_name(call.target)
        outs = self.outputs_for(call)
        path = sanitize_name(call.module_path) if call.module_path else ""
        kb = self.pb.kernel(f"{path}_{op}" if path else op)
        ins = [self.env.get(a.id) for a in tensor_args(call)] if op in ORDER_OPS else []
        self.seen_locals += emit_drawn(kb, call, ins, outs, self._drawn_input)
        self.pb.finish_kernel(kb)
        self.coverage.lowered += 1
        self.bind_outputs(call, outs, None)

    def _drawn_input(self, call: RecordedCall, pos: int, meta: TensorMeta) -> TensorInfo:
        """The extra input ``r<call>_<op>`` that holds what the real run drew."""
        hint = f"r{call.index}_{op_name(call.target)}" + (f"_{pos}" if pos else "")
        src = self.declare_uncovered(hint, ir_dtype(meta.dtype), meta.shape, (call.index,), pos)
        self.roles[src.ref.name] = "input"
        self.generated.append(src.ref.name)
        return src

    def attempt_lowering(
        self, fn: LoweringFn, opcall: OpCall, call: RecordedCall, *, inline: bool
    ) -> Any:
        """``fn`` on ``opcall``; rejected, on the call with its 0-d constants as tensors.

        A 0-d constant is inlined as a number (``x[:, 0] = 0.0`` lifts ``tensor(0.)``),
        which is what an operand slot wants; a lowering that needs a tensor there
        (``torch.sqrt(torch.tensor(c))``: RAFT's correlation scale) gets the tensor.
        """
        result = self.attempt(lambda: self._apply(fn, opcall))
        if not isinstance(result, Unsupported) or not inline:
            return result
        args = tuple(self.resolve(a, inline=False) for a in call.args)
        kwargs = {k: self.resolve(v, inline=False) for k, v in call.kwargs.items() if k != "out"}
        if args == opcall.args and kwargs == dict(opcall.kwargs):
            return result
        plain = dataclasses.replace(opcall, args=args, kwargs=kwargs)
        retry = self.attempt(lambda: self._apply(fn, plain))
        return result if isinstance(retry, Unsupported) else retry

    def _apply(self, fn: LoweringFn, call: OpCall) -> Any:
        """Run a lowering; its kernels join the program only if it returns."""
        host = BuilderKernels(self.pb, call.module_path)
        result = fn(LowerCtx(host, call.op), call)
        host.finish()
        return result

    def outputs_for(self, call: RecordedCall) -> list[TensorInfo | None]:
        """Declare (or locate) the tensors the call writes."""
        outs: list[TensorInfo | None] = []
        for pos, m in enumerate(call.outputs):
            if m is None or call.kind == "view" or not self.representable(m):
                outs.append(None)  # views are returned by the lowering; odd dtypes dropped
                continue
            if call.kind in ("inplace", "out") and m.id in self.env:
                outs.append(self.version_for_write(call, self.env[m.id]))
                continue
            hint = f"t{call.index}_{op_name(call.target)}" + (f"_{pos}" if pos else "")
            info = self.declare("temp", ir_dtype(m.dtype), m.shape, hint)
            self.roles[info.ref.name] = "temp"
            outs.append(info)
        return outs

    def version_for_write(self, call: RecordedCall, cur: TensorInfo) -> TensorInfo:
        """The value an in-place op writes: a new version, or the tensor itself.

        A full overwrite gets a new version (a temp; aliases are rebased after the
        op, so the op still reads the old one). A partial or scatter-like write goes
        into the existing tensor, made writable first (see `writable`).
        """
        storage = cur.ref
        op = op_name(call.target)
        full = shape_numel(cur.shape) == _numel_ref(storage)
        if op in INPLACE_PARTIAL_OPS or not full:
            return self.writable(cur, call)
        ref = self.pb.tensor("temp", storage.dtype, storage.shape, f"t{call.index}_{op}")
        self.roles[ref.name] = "temp"
        return dataclasses.replace(cur, ref=ref)

    def writable(self, cur: TensorInfo, call: RecordedCall) -> TensorInfo:
        """``cur`` in a storage kernels may write.

        The IR forbids writing inputs and parameters (E0214), so a partial in-place
        update of one first copies it to a new version in an in-place kernel: eager
        makes no such copy, so the bounds charge it nothing and count only the elements
        the update touches (Note [In-place updates] in docs/bounds.md; the input is
        listed in `LoweredProgram.mutated`).
        """
        storage = cur.ref
        if self.roles.get(storage.name) not in ("input", "param"):
            return cur
        ref = self.pb.tensor(
            "temp", storage.dtype, storage.shape, f"t{call.index}_{storage.name}_version"
        )
        self.roles[ref.name] = "temp"
        shape = tuple(_lit_shape(storage.shape))
        emit_copy(
            self.pb,
            f"{storage.name}_version",
            TensorInfo(storage, shape, storage.dtype),
            TensorInfo(ref, shape, storage.dtype),
            inplace=True,
        )
        self.rebase(storage, ref)
        return dataclasses.replace(cur, ref=ref)

    def note_mutation(self, name: str) -> None:
        self.scalar_consts.pop(name, None)
        if self.roles.get(name) in ("input", "param") and name not in self.mutated:
            self.mutated.append(name)

    def rebase(self, old: TensorRef, new: TensorRef) -> None:
        """Every alias of ``old``'s storage now reads the new version ``new``."""
        self.note_mutation(old.name)
        self.scalar_consts.pop(old.name, None)
        for tid in sorted(self.env.by_name.get(old.name, ())):
            self.env[tid] = dataclasses.replace(self.env[tid], ref=new)

    def bind_outputs(
        self, call: RecordedCall, outs: Sequence[TensorInfo | None], result: Any
    ) -> None:
        values: list[TensorInfo | None] = list(outs)
        if result is not None:
            for k, r in enumerate(result):
                if isinstance(r, TensorInfo) and k < len(values):
                    values[k] = r
        op = op_name(call.target)
        for m, v in zip(call.outputs, values, strict=False):
            if m is None or v is None:
                continue
            old = self.env.get(m.id)
            if call.kind in ("inplace", "out") and old is not None and old.ref.name != v.ref.name:
                self.rebase(old.ref, v.ref)
            self.env[m.id] = v
            if call.kind == "view" or op in _RESHAPES:
                src = next(iter(tensor_args(call)), None)
                if (
                    op in _RESHAPES
                    and src is not None
                    and (src.id in self.reshape_only or self._is_base(src.id))
                    and v.numel == _numel_ref(v.ref)
                ):
                    self.reshape_only.add(m.id)

    def _is_base(self, tid: int) -> bool:
        info = self.env.get(tid)
        return info is not None and info.index_map is None

    # -- uncovered ops -------------------------------------------------------------
    def try_fallback(self, call: RecordedCall, opcall: OpCall) -> bool:
        if self.fallback is None:
            return False
        kernel_prog = self.fallback(opcall)
        if kernel_prog is None:
            return False
        outs = [o for o in opcall.outputs]
        if call.kind == "view":
            outs = []
            for pos, m in enumerate(call.outputs):
                if m is None:
                    outs.append(None)
                    continue
                hint = f"t{call.index}_{op_name(call.target)}_{pos}"
                outs.append(self.declare("temp", ir_dtype(m.dtype), m.shape, hint))
        args = [x for x in flat_values(opcall.args, opcall.kwargs) if isinstance(x, TensorInfo)]
        splice_program(
            self.pb,
            kernel_prog,
            args,
            [o for o in outs if o is not None],
            prefix=opcall.module_path,
        )
        self.bind_outputs(call, outs, None)
        return True

    def mark_uncovered(self, call: RecordedCall, nbytes: int, reason: str) -> None:
        """Report ``call`` uncovered; its outputs become ``u<call>_<op>`` inputs."""
        reads = [self.env[a.id] for a in tensor_args(call) if a.id in self.env]
        self.uncover(call.target, nbytes, reason, reads, call.counted_flops)
        for pos, m in enumerate(call.outputs):
            if m is None:
                continue
            cur = self.env.get(m.id) if call.kind in ("inplace", "out") else None
            if not self.representable(m):
                continue
            hint = uncovered_name(call.index, op_name(call.target), pos)
            value = self.declare_uncovered(hint, ir_dtype(m.dtype), m.shape, (call.index,), pos)
            self.roles[value.ref.name] = "input"
            if cur is not None and shape_numel(cur.shape) != _numel_ref(cur.ref):
                self._write_into(cur, value, call)  # partial in-place: store the values
                continue
            if cur is not None:
                self.rebase(cur.ref, value.ref)
            self.env[m.id] = value

    def _write_into(self, dst: TensorInfo, src: TensorInfo, call: RecordedCall) -> None:
        dst = self.writable(dst, call)
        emit_copy(self.pb, f"t{call.index}_{op_name(call.target)}_store", src, dst)

    # -- outputs -------------------------------------------------------------------
    def finish(self) -> LoweredProgram:
        rename: dict[str, str] = {}
        out_names: list[str | None] = []
        k = 0
        for meta in self.capture.outputs:
            if meta is None:
                out_names.append(None)
                continue
            name = output_name(k)
            k += 1
            if meta.id in self.unrepresentable or meta.id not in self.env:
                out_names.append(None)  # an output of a dtype the IR lacks is not bound
                continue
            info = self.env[meta.id]
            role = self.roles.get(info.ref.name)
            direct = info.index_map is None or meta.id in self.reshape_only
            if role == "temp" and direct and info.ref.name not in rename:
                rename[info.ref.name] = name
            else:
                self._copy_out(info, name, rename)
            out_names.append(name)
        program = rename_tensors(self.pb.build(), rename, role="output")
        program = aliases_last(prune_unused(write_empty_outputs(program)))
        kept = {t.name for t in program.tensors}
        cap = self.capture
        lowered = self.lowered(
            program,
            inputs=tuple(None if m is None else self._initial_names.get(m.id) for m in cap.inputs),
            params=self._kept_names(cap.params, kept),
            outputs=tuple(out_names),
            constants=self._kept_names(cap.constants, kept),
            mutated=tuple(self.mutated),
            renamed=rename,
        )
        drawn = {v.name for v in lowered.uncovered_values} & set(self.generated)
        return dataclasses.replace(
            lowered,
            generated=tuple(sorted(drawn)),
            keep_alive=(*lowered.keep_alive, *self.seen_locals),
        )

    def _copy_out(self, info: TensorInfo, name: str, rename: dict[str, str]) -> None:
        """Write an output eager returns as a view or alias: an alias kernel (Note [Alias
        kernels] in docs/bounds.md), run by validation and free in the bounds."""
        ref = self.pb.tensor("output", info.dtype, info.shape, f"{name}_value")
        rename[ref.name] = name
        self.roles[ref.name] = "output"
        emit_copy(
            self.pb, f"{name}_copy", info, TensorInfo(ref, info.shape, info.dtype), alias=True
        )

    def _kept_names(
        self, tensors: Sequence[NamedTensor], kept: set[str]
    ) -> tuple[tuple[str, str], ...]:
        """``(capture name, IR name)`` of the interface tensors the program still reads."""
        names = ((nt.name, self._initial_names.get(nt.meta.id, "")) for nt in tensors)
        return tuple((key, name) for key, name in names if name in kept)

    def run(self) -> LoweredProgram:
        self.interface()
        self._initial_names = {tid: info.ref.name for tid, info in self.env.items()}
        for call in self.capture.calls:  # every tensor's meta first: `call_bytes` is final
            for m in call.outputs:
                if m is not None:
                    self.metas.setdefault(m.id, m)
        for call in self.capture.calls:
            self.pb.source = call.source  # the report's kernels[].source
            self.lower_call(call)
        return self.finish()


def lower_capture(
    capture: TorchCapture, *, op_fallback: OpFallback | None = None
) -> LoweredProgram:
    """Lower every call of ``capture`` to IR kernels.

    Args:
        capture: the captured program.
        op_fallback: tried for calls without a lowering (see `OpFallback`).

    Returns:
        The program, its interface names and its coverage.

    Raises:
        FrontendError: E0510 for inputs/parameters of unsupported dtypes.
    """
    return _Lowerer(capture, op_fallback).run()


def ir_dtype(name: str) -> DType:
    """The IR dtype of a torch dtype name.

    Raises:
        FrontendError: E0510 for dtypes the IR cannot represent (uint8, int16, complex).
    """
    try:
        return IR_DTYPES[name]
    except KeyError:
        raise FrontendError(
            f"tensors of dtype {name} cannot be represented in the IR",
            code="E0510",
            notes=(f"supported: {', '.join(IR_DTYPES)}",),
        ) from None


def _itemsize(dtype: str) -> int:
    d = IR_DTYPES.get(dtype)
    return d.itemsize_bytes if d is not None else 1


def _lit_shape(shape: Sequence[Any]) -> list[int]:
    return [int(getattr(d, "value", d)) for d in shape]


def _numel_ref(ref: TensorRef) -> int:
    return shape_numel(_lit_shape(ref.shape))
