"""What a parallel plan needs to know about a single-device program.

Contract: ``(Program, sizes, phase_of, hints) -> ModelStructure``, pure. It reads the
program's parameters (``p_<module path>`` with ``.`` spelled ``_``) and kernel names
(forward kernels carry their module path as a prefix; ``backward_`` and
``optimizer_`` kernels their phase) to find:

* the repeated block stack (the parameter prefix with the most distinct integer
  indices, e.g. ``layers_0_..`` .. ``layers_95_..``) and its layer count;
* the hidden size (the most common input width of the stack's 2-D weights);
* the TP all-reduce points per layer (one per attention block, one per MLP/MoE block,
  Megatron's row-parallel outputs);
* which kernels TP leaves replicated (norms: Note [Replicated work]) and which
  forward kernels a full recompute runs again (the stack's);
* the parameter, gradient, optimizer-state and saved-activation bytes.

Note [Replicated work]: only kernels that are certainly replicated under Megatron
TP are charged in full on every TP rank: normalisations over the whole hidden (a name
with ``norm`` or an ``ln`` path component, reading a 1-D parameter of the hidden's
length and no weight matrix; a per-head norm is sharded) and paths the plan file lists.
Every other kernel is divided by tp. Dividing a replicated kernel under-counts, which
keeps the bound a lower bound; the converse would over-count, so the rule errs that way.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from solar.ir import (
    Access,
    Assign,
    Expr,
    If,
    Kernel,
    Program,
    Reduce,
    TensorDecl,
    eval_int,
    walk_exprs,
    walk_stmts,
)

__all__ = ["ModelStructure", "infer_structure", "kernel_tensors"]

_INDEXED = re.compile(r"^p_(?P<prefix>[A-Za-z0-9_]*?)_(?P<index>\d+)_(?P<rest>.+)$")
_ATTN = re.compile(r"(^|_)(self_)?(attn|attention|mixer|qkv|c_attn|query_key_value|wqkv|to_qkv|"
                   r"q_proj|k_proj|v_proj|wq|wk|wv)(_|$)")
_MLP = re.compile(r"(^|_)(mlp|ffn|feed_forward|fc\d*|c_fc|dense_h_to_4h|up_proj|gate_proj|"
                  r"w[123]|linear[12])(_|$)")
_MOE = re.compile(r"(^|_)experts?(_|$)")
_KEY = re.compile(r"(^|_)(k_proj|wk|key|to_k)_weight$")
_FUSED_QKV = re.compile(r"(^|_)(qkv|c_attn|query_key_value|wqkv|to_qkv|in_proj)_weight$")
_NORM = re.compile(r"(norm|(^|_)ln(_?f|_?\d+)?(_|$))")
_HEAD_NAMES = ("HEADS", "N_HEAD", "N_HEADS", "NHEAD", "NUM_HEADS", "NUM_ATTENTION_HEADS",
               "N_HEADS_Q")


@dataclass(frozen=True, slots=True)
class ModelStructure:
    """The facts a plan's per-rank work and collectives are derived from.

    Attributes:
        layers: repeated blocks (1 when no stack is found: the program is one block).
        stack: the stack's parameter prefix (``layers``), if found.
        hidden: the hidden size H, if found.
        heads: attention heads, if known (a size constant named like ``HEADS``).
        tokens: tokens of one micro-batch as the program has them.
        batch: the leading dimension of the first input.
        act_bytes: bytes per activation element.
        sub_blocks: TP all-reduce points per layer.
        moe: the blocks hold experts.
        param_bytes: parameters the forward/backward read.
        expert_param_bytes: the part of ``param_bytes`` in expert weights.
        grad_bytes: gradients of the parameters (as the program's dtypes have them).
        optimizer_bytes: tensors only the optimizer reads (its state).
        saved_activation_bytes: values the forward writes and the backward reads.
        replicated: kernels TP leaves replicated (Note [Replicated work]).
        stack_forward: forward kernels of the stack (what a full recompute repeats).
        phase: each kernel's phase.
        kv_width: the width of K (= of V) per token, summed over heads, when the block
            has attention (Note [K/V width]); None when it has none or it is unknown.
    """

    layers: int
    stack: str | None
    hidden: int | None
    heads: int | None
    tokens: int
    batch: int | None
    act_bytes: int
    sub_blocks: int
    moe: bool
    param_bytes: float
    expert_param_bytes: float
    grad_bytes: float
    optimizer_bytes: float
    saved_activation_bytes: float
    replicated: frozenset[str]
    stack_forward: frozenset[str]
    phase: Mapping[str, str]
    kv_width: int | None = None


def kernel_tensors(kernel: Kernel) -> tuple[frozenset[str], frozenset[str]]:
    """The tensors a kernel reads and the tensors it writes (its locals excepted)."""
    reads: set[str] = set()
    writes: set[str] = set()
    for stmt, _ in walk_stmts(kernel.body):
        exprs: list[Expr] = []
        if isinstance(stmt, Assign | Reduce):
            writes.add(stmt.target.tensor)
            exprs = [stmt.value, *stmt.target.indices]
        elif isinstance(stmt, If):
            exprs = [stmt.cond]
        for e in exprs:
            reads.update(a.tensor for a in walk_exprs(e) if isinstance(a, Access))
    local = {d.name for d in kernel.locals}
    return frozenset(reads - local), frozenset(writes - local)


def _nbytes(decl: TensorDecl, sizes: Mapping[str, int]) -> int:
    n = decl.dtype.itemsize_bytes
    for d in decl.shape:
        n *= eval_int(d, sizes)
    return n


def _shape(decl: TensorDecl, sizes: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(eval_int(d, sizes) for d in decl.shape)


def _kv_width(shapes: Mapping[str, tuple[int, ...]], hidden: int | None,
              heads: int | None) -> int | None:
    """Note [K/V width]: a key projection's output width (``k_proj``-like weights, the
    dimension that is not the hidden), or a fused Q/K/V projection's ``(out - hidden) / 2``
    (queries take the hidden); without either, one head ``hidden / heads`` (at least one
    K/V head: a lower estimate, which keeps the K/V exchange a lower bound)."""
    if not hidden:
        return None
    for name, sh in shapes.items():
        if len(sh) == 2 and hidden in sh:
            other = sh[0] if sh[1] == hidden else sh[1]
            if _KEY.search(name):
                return other
            if _FUSED_QKV.search(name) and other > hidden and (other - hidden) % 2 == 0:
                return (other - hidden) // 2
    return hidden // heads if heads else None


def _stack(params: Iterable[str], hint: str | None) -> tuple[str | None, int]:
    indices: dict[str, set[int]] = {}
    for name in params:
        m = _INDEXED.match(name)
        if m:
            indices.setdefault(m.group("prefix"), set()).add(int(m.group("index")))
    if hint is not None:
        key = hint.replace(".", "_")
        return (key, len(indices[key])) if key in indices else (None, 1)
    if not indices:
        return None, 1
    prefix = max(indices, key=lambda p: (len(indices[p]), p))
    return (prefix, len(indices[prefix])) if len(indices[prefix]) > 1 else (None, 1)


def infer_structure(
    program: Program,
    sizes: Mapping[str, int],
    phase_of: Callable[[str], str],
    *,
    size_constants: Mapping[str, int] | None = None,
    heads: int | None = None,
    stack_hint: str | None = None,
    replicated_paths: tuple[str, ...] = (),
) -> ModelStructure:
    """Infer the `ModelStructure` of a single-device program (module docstring).

    Args:
        program: the program (a training step or a forward).
        sizes: its size binding.
        phase_of: the phase of each kernel by name.
        size_constants: the model file's size constants (for the heads).
        heads: the heads, when the plan file gives them.
        stack_hint: the stack's module path, when the plan file gives it.
        replicated_paths: module paths the plan file says TP replicates.

    Returns:
        The structure.
    """
    decls = {d.name: d for d in program.tensors}
    uses = {k.name: kernel_tensors(k) for k in program.kernels}
    touches = {name: r | w for name, (r, w) in uses.items()}
    phase = {k.name: phase_of(k.name) for k in program.kernels}
    readers: dict[str, set[str]] = {}
    fwd_written: set[str] = set()
    for k in program.kernels:
        reads, writes = uses[k.name]
        for t in reads:
            readers.setdefault(t, set()).add(phase[k.name])
        if phase[k.name] == "forward" and not k.alias:
            fwd_written |= writes
    params = [d for d in program.tensors if d.role == "param"]
    model = [d for d in params if readers.get(d.name, set()) & {"forward", "backward"}]
    state = [d for d in params if readers.get(d.name) == {"optimizer"}]
    prefix, layers = _stack((d.name for d in model), stack_hint)
    in_stack = [d for d in model if prefix and d.name.startswith(f"p_{prefix}_")] or model
    widths = Counter(_shape(d, sizes)[-1] for d in in_stack if len(d.shape) == 2)
    hidden = widths.most_common(1)[0][0] if widths else None
    first = next(iter(_INDEXED.match(d.name) for d in in_stack if _INDEXED.match(d.name)), None)
    block = (
        [d.name for d in in_stack if (m := _INDEXED.match(d.name)) and first
         and m.group("index") == first.group("index")]
        if first else [d.name for d in in_stack]
    )
    attn = any(_ATTN.search(n) for n in block)
    moe = any(_MOE.search(n) for n in block)
    mlp = moe or any(_MLP.search(n) for n in block)
    weights = sum(1 for n in block if len(decls[n].shape) == 2)
    sub_blocks = int(attn) + int(mlp) or (1 if weights >= 2 else 0)
    inputs = [d for d in program.tensors if d.role == "input"]
    x0 = inputs[0] if inputs else None
    tokens, batch, act_bytes = 1, None, 2
    if x0 is not None:
        shape = _shape(x0, sizes)
        numel = 1
        for s in shape:
            numel *= s
        batch = shape[0] if shape else None
        if not x0.dtype.is_float:  # token ids (the enum's name is upper case: its value)
            tokens = numel
        elif hidden and shape and shape[-1] == hidden:
            tokens = numel // hidden
        else:
            tokens = shape[0] * shape[1] if len(shape) >= 2 else max(numel, 1)
        if x0.dtype.is_float:
            act_bytes = x0.dtype.itemsize_bytes
    if model and (x0 is None or not x0.dtype.is_float):
        act_bytes = model[0].dtype.itemsize_bytes
    if heads is None and size_constants:
        named = {k.upper(): v for k, v in size_constants.items()}
        heads = next((named[n] for n in _HEAD_NAMES if n in named), None)
    reps = tuple(p.replace(".", "_") for p in replicated_paths)
    def norm_of_hidden(k: str) -> bool:
        """A kernel that reads a hidden-wide 1-D parameter (a norm's weight over the whole
        hidden, not a per-head norm TP shards) and no weight matrix."""
        shapes = [_shape(decls[t], sizes) for t in touches[k]
                  if t in decls and decls[t].role == "param"]
        return (hidden is not None and any(sh == (hidden,) for sh in shapes)
                and all(len(sh) < 2 for sh in shapes))

    replicated = frozenset(
        k for k in touches
        if phase[k] != "optimizer" and norm_of_hidden(k)
        and (_NORM.search(k) or any(k.startswith(f"{r}_") for r in reps))
    )
    stack_forward = frozenset(
        k for k in touches
        if prefix and phase[k] == "forward" and re.match(rf"^{re.escape(prefix)}_\d+_", k)
    )
    saved = sum(
        _nbytes(d, sizes) for d in program.tensors
        if d.role not in ("param", "input") and d.name in fwd_written
        and "backward" in readers.get(d.name, set())
    )
    param_bytes = float(sum(_nbytes(d, sizes) for d in model))
    has_backward = any(p == "backward" for p in phase.values())
    return ModelStructure(
        layers=layers,
        stack=prefix,
        hidden=hidden,
        heads=heads,
        tokens=max(tokens, 1),
        batch=batch,
        act_bytes=act_bytes,
        sub_blocks=sub_blocks,
        moe=moe,
        param_bytes=param_bytes,
        expert_param_bytes=float(sum(_nbytes(d, sizes) for d in model if _MOE.search(d.name))),
        grad_bytes=param_bytes if has_backward else 0.0,
        optimizer_bytes=float(sum(_nbytes(d, sizes) for d in state)),
        saved_activation_bytes=float(saved),
        replicated=replicated,
        stack_forward=stack_forward,
        phase=phase,
        kv_width=_kv_width({n: _shape(decls[n], sizes) for n in block}, hidden, heads)
        if attn else None,
    )
