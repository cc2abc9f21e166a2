"""One training step of a PyTorch model as a program: forward, loss, backward, update.

Contract: ``Instance + TrainStep -> Instance`` (`training_instance`). The returned
instance's callable runs, on the same (fake or real) tensors the forward uses:

1. **forward** and the **loss**: the file's own ``loss_fn(output, *targets)`` (or the
   callable ``get_loss()`` returns, e.g. ``nn.CrossEntropyLoss()``); without one, the
   documented default: the mean of the output (the sum of the means of every
   floating output). ``get_targets()`` supplies the extra loss arguments; they are
   program inputs after the model's inputs.
2. **backward**: ``torch.autograd.grad`` of the loss with respect to every parameter
   and every input that requires grad (a file whose forward calls ``loss.backward()``
   itself keeps its own backward, and a model holding DDP runs ``loss.backward()`` so
   that DDP's gradient hooks fire; their gradients are read from ``.grad``).
3. **optimizer**: one update written out of place with the ATen calls of PyTorch's
   single-tensor (``foreach=False``) implementations, so each kernel eager launches is
   one IR kernel (Note [Optimizer math]); a file's ``fused=True`` optimizer is the one
   ``_fused_<kind>`` call CUDA runs, one kernel per parameter (Note [Fused optimizer] in
   ops_optim.py). Its state (momentum buffer, Adam moments) is
   program state: ``inst.state`` entries ``<kind>.<parameter>``, so the IR names them
   ``p_exp_avg_<parameter>`` and the reference gives them seeded non-trivial values.

The callable returns ``(loss, *gradients, *updated parameters, *updated state)``: the
gradients are outputs because a PyTorch step writes ``.grad`` (and validation compares
them against autograd); nothing is updated in place, so the real parameters stay
pristine for the next build.

Phases: the backward runs inside a `Backward` module and the update inside an
`Optimizer` module, so the capture's module-path hooks name their kernels
``backward_<op>`` and ``optimizer_<op>`` (`phase_of_kernel`); everything else
(the model and the loss) is the forward.

Note [RNN steps]: on CPU, eager runs a training-mode LSTM as oneDNN's fused
``mkldnn_rnn_layer`` whose backward (``mkldnn_rnn_layer_backward``, with an opaque
workspace) is not lowered. A step of a model with recurrent layers therefore runs with
oneDNN disabled (in the capture and in the reference alike): eager then unrolls each time
step into matmuls and pointwise ops, whose backward ops are all lowered. The forward's
work is the same; it is split into more launches (the unfused bound counts them, the
fused bound does not).

Note [Optimizer math]: PyTorch's ``_single_tensor_sgd``/``_single_tensor_adam`` update
in place (``param.addcdiv_``); written out of place the same kernels run
(``mul``, ``lerp``, ``addcmul``, ``sqrt``, ``div``, ``add``, ``addcdiv``), each a full
overwrite in eager, so the bounds see the same launches and bytes. The step count of
Adam's bias correction is `ADAM_STEP` (a constant; any step >= 1 costs the same).

Error codes: E0540 the file's optimizer is not one SOLAR models (SGD, Adam, AdamW; no
amsgrad/maximize); E0541 nothing requires grad; E0503 a hook returned the wrong kind of
value (``get_loss``, ``get_targets``, a loss that is not one element).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from solar.diagnostics import FrontendError
from solar.frontends.pytorch.capture_dist import local_shard
from solar.frontends.pytorch.instance import SEED, Instance, seed_everything, user_code
from solar.training import Phase

__all__ = [
    "ADAM_STEP",
    "DEFAULT_OPTIMIZER",
    "OptimizerKind",
    "OptimizerSpec",
    "Phase",
    "TrainStep",
    "describe_optimizer",
    "optimizer_from",
    "phase_of_kernel",
    "training_instance",
]

OptimizerKind: TypeAlias = Literal["sgd", "adam", "adamw"]
"""The optimizers a step can apply."""

DEFAULT_OPTIMIZER: Final[OptimizerKind] = "sgd"
"""The update when neither ``--optimizer`` nor the file's ``get_optimizer`` says."""

ADAM_STEP: Final = 10
"""Step count used in Adam's bias correction (a constant of the step; costs nothing)."""

_PHASE_PREFIXES: Final[tuple[tuple[str, Phase], ...]] = (
    ("backward_", "backward"),
    ("optimizer_", "optimizer"),
)


@dataclass(frozen=True, slots=True)
class OptimizerSpec:
    """An optimizer's kind and hyperparameters (PyTorch's defaults unless given).

    Attributes:
        kind: sgd, adam or adamw.
        lr: learning rate.
        momentum: SGD momentum (0: no buffer).
        dampening: SGD dampening.
        nesterov: SGD Nesterov momentum.
        weight_decay: L2 penalty (Adam, SGD) or decoupled decay (AdamW).
        betas: Adam's moment decay rates.
        eps: Adam's denominator term.
        fused: the user asked for ``fused=True``: the update is one ``_fused_<kind>`` call
            (one kernel per parameter, Note [Fused optimizer] in ops_optim.py).
    """

    kind: OptimizerKind
    lr: float = 1e-3
    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    fused: bool = False

    @property
    def state_kinds(self) -> tuple[str, ...]:
        """The per-parameter state tensors this optimizer keeps."""
        if self.kind == "sgd":
            return ("momentum_buffer",) if self.momentum != 0.0 else ()
        return ("exp_avg", "exp_avg_sq")


@dataclass(frozen=True, slots=True)
class TrainStep:
    """How to build the training step around a program.

    Attributes:
        optimizer: the update; ``None``: the file's ``get_optimizer`` if it defines one,
            else `DEFAULT_OPTIMIZER` with PyTorch's default hyperparameters (SGD: lr 1e-3
            here, PyTorch requires one).
    """

    optimizer: OptimizerSpec | None = None


def phase_of_kernel(name: str) -> Phase:
    """The phase a kernel of a captured step belongs to, from its name.

    >>> phase_of_kernel("backward_mm"), phase_of_kernel("fc1_addmm")
    ('backward', 'forward')
    """
    for prefix, phase in _PHASE_PREFIXES:
        if name.startswith(prefix):
            return phase
    return "forward"


# ---------------------------------------------------------------------------- building
def _hook(namespace: Any, name: str) -> Callable[..., Any] | None:
    fn: object = getattr(namespace, name, None) if namespace is not None else None
    return fn if callable(fn) else None


def _file_loss(namespace: Any) -> Callable[..., Any] | None:
    """``loss_fn`` of the file, or what its ``get_loss()`` returns."""
    fn = _hook(namespace, "loss_fn")
    if fn is not None:
        return fn
    get = _hook(namespace, "get_loss")
    if get is None:
        return None
    with user_code("get_loss()"):
        loss: object = get()
    if not callable(loss):
        raise FrontendError(
            f"get_loss() returned {type(loss).__name__}, expected a callable", code="E0503"
        )
    return loss


def _targets(namespace: Any, fake_mode: Any) -> tuple[Any, ...]:
    get = _hook(namespace, "get_targets")
    if get is None:
        return ()
    ctx = fake_mode if fake_mode is not None else contextlib.nullcontext()
    with ctx, user_code("get_targets()"):
        seed_everything(1)
        targets = get()
    if not isinstance(targets, list | tuple):
        raise FrontendError(
            f"get_targets() returned {type(targets).__name__}, expected a list or tuple",
            code="E0503",
        )
    return tuple(targets)


def optimizer_from(opt: Any) -> OptimizerSpec:
    """The `OptimizerSpec` of a ``torch.optim`` optimizer (its first param group).

    Raises:
        FrontendError: E0540 for an optimizer SOLAR does not model.
    """
    import torch

    kinds: dict[type, OptimizerKind] = {
        torch.optim.SGD: "sgd",
        torch.optim.Adam: "adam",
        torch.optim.AdamW: "adamw",
    }
    kind = kinds.get(type(opt))
    if kind is None:
        raise FrontendError(
            f"get_optimizer() built a {type(opt).__name__}; SOLAR models SGD, Adam and AdamW",
            code="E0540",
            notes=("pass --optimizer sgd|adam|adamw to bound the step with one of them",),
        )
    group = opt.param_groups[0]
    if group.get("amsgrad") or group.get("maximize"):
        raise FrontendError(
            f"{type(opt).__name__} with amsgrad/maximize is not modelled", code="E0540"
        )
    if kind == "sgd":
        return OptimizerSpec(
            kind,
            lr=float(group["lr"]),
            momentum=float(group.get("momentum", 0.0)),
            dampening=float(group.get("dampening", 0.0)),
            nesterov=bool(group.get("nesterov", False)),
            weight_decay=float(group.get("weight_decay", 0.0)),
            fused=bool(group.get("fused")),
        )
    b1, b2 = group.get("betas", (0.9, 0.999))
    return OptimizerSpec(
        kind,
        lr=float(group["lr"]),
        weight_decay=float(group.get("weight_decay", 0.0)),
        betas=(float(b1), float(b2)),
        eps=float(group.get("eps", 1e-8)),
        fused=bool(group.get("fused")),
    )


def _file_optimizer(namespace: Any, params: Sequence[Any]) -> OptimizerSpec | None:
    get = _hook(namespace, "get_optimizer")
    if get is None:
        return None
    with user_code("get_optimizer(params)"):
        opt = get(list(params))
    return optimizer_from(opt)


def _reduces_gradients(module: Any) -> bool:
    """True when ``module`` holds a ``DistributedDataParallel`` module: its gradients
    are all-reduced from accumulate-grad hooks, which ``torch.autograd.grad`` never
    runs (Note [DDP capture] in capture_dist.py)."""
    import sys

    if "torch.nn.parallel" not in sys.modules or not hasattr(module, "modules"):
        return False
    from torch.nn.parallel import DistributedDataParallel

    return any(isinstance(m, DistributedDataParallel) for m in module.modules())


def _phase_module(name: str) -> Any:
    """A module whose calls mark a phase in the capture's module path."""
    import torch

    class _Phase(torch.nn.Module):
        solar_phase = True  # named by its class, not as an entry's root module (capture.py)

        def forward(self, fn: Callable[[], Any]) -> Any:
            return fn()

    cls = type(name, (_Phase,), {})
    return cls()


@contextlib.contextmanager
def _backward_marked(backward: Any) -> Iterator[None]:
    """Run every ``Tensor.backward``/``torch.autograd.backward`` the user's code makes
    inside the `Backward` phase module (so its kernels belong to the backward)."""
    import torch

    original = torch.autograd.backward

    def marked(*args: Any, **kwargs: Any) -> Any:
        return backward(lambda: original(*args, **kwargs))

    torch.autograd.backward = marked
    try:
        yield
    finally:
        torch.autograd.backward = original


def _rnn_decomposed(module: Any) -> contextlib.AbstractContextManager[Any]:
    """oneDNN off for a model with recurrent layers (Note [RNN steps])."""
    import torch

    if isinstance(module, torch.nn.Module) and any(
        isinstance(m, torch.nn.RNNBase) for m in module.modules()
    ):
        return torch.backends.mkldnn.flags(enabled=False)
    return contextlib.nullcontext()


def _default_loss(out: Any) -> Any:
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(out)
    floats = [x for x in leaves if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if not floats:
        raise FrontendError(
            "the model returned no floating tensor to take the default loss of",
            code="E0503",
            notes=("define loss_fn(output, *targets) in the model file",),
        )
    loss = floats[0].mean()
    for x in floats[1:]:
        loss = loss + x.mean()
    return loss


def _update(
    spec: OptimizerSpec, p: Any, g: Any, state: Sequence[Any]
) -> tuple[Any, tuple[Any, ...]]:
    """One out-of-place update of ``p`` (Note [Optimizer math]); returns ``(p', state')``."""
    import torch

    lr, wd = spec.lr, spec.weight_decay
    if spec.fused:
        return _fused_update(spec, p, g, state)
    if spec.kind == "sgd":
        if wd != 0.0:
            g = torch.add(g, p, alpha=wd)
        new_state: tuple[Any, ...] = ()
        if spec.momentum != 0.0:
            buf = torch.add(torch.mul(state[0], spec.momentum), g, alpha=1.0 - spec.dampening)
            new_state = (buf,)
            g = torch.add(g, buf, alpha=spec.momentum) if spec.nesterov else buf
        return torch.add(p, g, alpha=-lr), new_state
    b1, b2 = spec.betas
    m, v = state
    if wd != 0.0:
        if spec.kind == "adamw":
            p = torch.mul(p, 1.0 - lr * wd)
        else:
            g = torch.add(g, p, alpha=wd)
    m2 = torch.lerp(m, g, 1.0 - b1)
    v2 = torch.addcmul(torch.mul(v, b2), g, g, value=1.0 - b2)
    bc1 = 1.0 - b1**ADAM_STEP
    bc2_sqrt = (1.0 - b2**ADAM_STEP) ** 0.5
    denom = torch.add(torch.div(torch.sqrt(v2), bc2_sqrt), spec.eps)
    return torch.addcdiv(p, m2, denom, value=-lr / bc1), (m2, v2)


def _fused_update(
    spec: OptimizerSpec, p: Any, g: Any, state: Sequence[Any]
) -> tuple[Any, tuple[Any, ...]]:
    """The update as the one ``_fused_<kind>`` ATen call eager makes for ``fused=True``
    (its functional form, on one-parameter lists; Note [Fused optimizer] in ops_optim.py)."""
    import torch

    aten = torch.ops.aten
    if spec.kind == "sgd":
        _meta_fused_sgd()
        ps, _, bufs = aten._fused_sgd.default(
            [p], [g], list(state), weight_decay=spec.weight_decay, momentum=spec.momentum,
            lr=spec.lr, dampening=spec.dampening, nesterov=spec.nesterov, maximize=False,
            is_first_step=False,
        )
        return ps[0], tuple(bufs)
    op = aten._fused_adamw if spec.kind == "adamw" else aten._fused_adam
    step = torch.full((), float(ADAM_STEP), dtype=torch.float32, device=p.device)
    ps, _, ms, vs, _ = op.default(
        [p], [g], [state[0]], [state[1]], [], [step], lr=spec.lr, beta1=spec.betas[0],
        beta2=spec.betas[1], weight_decay=spec.weight_decay, eps=spec.eps, amsgrad=False,
        maximize=False,
    )
    return ps[0], (ms[0], vs[0])


_META_SGD: list[Any] = []


def _meta_fused_sgd() -> None:
    """A ``meta`` kernel for ``aten::_fused_sgd_`` (torch has none; Adam's exist): it
    updates in place, so on ``meta`` it does nothing. Registered once."""
    import torch

    if _META_SGD or torch._C._dispatch_has_kernel_for_dispatch_key("aten::_fused_sgd_", "Meta"):
        return
    lib = torch.library.Library("aten", "IMPL", "Meta")  # type: ignore[no-untyped-call]
    lib.impl("_fused_sgd_", lambda *args, **kwargs: None)  # type: ignore[no-untyped-call]
    _META_SGD.append(lib)


def _state_values(kind: str, p: Any, k: int) -> Any:
    """Seeded optimizer state for parameter ``k`` (non-negative second moments); of its
    local shard for a DTensor (the optimizer updates each rank's shard)."""
    import torch

    p = local_shard(p)
    if p.device.type == "meta" or _is_fake(p):
        return torch.empty_like(p, requires_grad=False)
    gen = torch.Generator().manual_seed(SEED + 1000 + k)
    with torch.no_grad():
        x = torch.randn(p.shape, generator=gen, dtype=torch.float32)
        x = x.abs() * 1e-4 if kind == "exp_avg_sq" else x * 1e-2
        return x.to(p.dtype)


def _is_fake(t: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def training_instance(inst: Instance, step: TrainStep, *, fake_mode: Any = None) -> Instance:
    """``inst`` turned into one training step (see the module docstring).

    Args:
        inst: the built program (model in training mode).
        step: the step's options.
        fake_mode: the fake mode ``inst`` was built under, if any (targets are built
            under it too).

    Returns:
        The instance of the step: its callable takes ``(*inputs, *targets, **keyword
        inputs)``; its state adds the optimizer state.

    Raises:
        FrontendError: E0501 (user code), E0503 (hooks returned the wrong thing), E0540
            (an optimizer SOLAR does not model), E0541 (nothing to train).
    """
    import torch

    namespace = inst.namespace
    params = [(k, v) for k, v in inst.state.items() if getattr(v, "requires_grad", False)]
    spec = step.optimizer or _file_optimizer(namespace, [v for _, v in params])
    spec = spec or OptimizerSpec(DEFAULT_OPTIMIZER)
    loss_fn = _file_loss(namespace)
    targets = _targets(namespace, fake_mode)
    n_inputs = len(inst.args)
    state = dict(inst.state)
    slots: list[tuple[str, ...]] = []
    for k, (name, p) in enumerate(params):
        names = tuple(f"{kind}.{name}" for kind in spec.state_kinds)
        for kind, key in zip(spec.state_kinds, names, strict=True):
            state[key] = _state_values(kind, p, k)
        slots.append(names)
    grad_inputs = [a for a in inst.args if isinstance(a, torch.Tensor) and a.requires_grad]
    if not params and not grad_inputs:
        raise FrontendError(
            "--train: the program has no parameter or input that requires grad", code="E0541"
        )
    backward, optimizer = _phase_module("Backward"), _phase_module("Optimizer")
    base = inst.fn

    def step_fn(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
        model_args, extra = args[:n_inputs], args[n_inputs:]
        tensors = [p for _, p in params]
        leaves = [t for t in (*tensors, *grad_inputs) if t.is_leaf]
        for t in leaves:
            t.grad = None
        with torch.enable_grad(), _backward_marked(backward), _rnn_decomposed(inst.module):
            out = base(*model_args, **kwargs)
            with user_code("the loss"):
                loss = loss_fn(out, *extra) if loss_fn is not None else _default_loss(out)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise FrontendError("the loss is not a one-element tensor", code="E0503")
            wrt = [*tensors, *grad_inputs]
            if any(t.grad is not None for t in leaves):  # the forward ran its own backward
                grads = [t.grad if t.is_leaf else None for t in wrt]
            elif _reduces_gradients(inst.module):  # DDP's hooks need .backward()
                loss.backward()  # type: ignore[no-untyped-call]  # Backward phase: _backward_marked
                grads = [t.grad if t.is_leaf else None for t in wrt]
            else:
                grads = list(backward(lambda: torch.autograd.grad(loss, wrt, allow_unused=True)))
        updates = optimizer(lambda: _apply_updates(spec, params, grads, slots, state))
        kept = tuple(g for g in grads if g is not None)
        return (loss.detach(), *kept, *updates)

    step_fn.solar_train_step = (  # type: ignore[attr-defined]
        _loss_words(namespace, loss_fn),
        describe_optimizer(spec),
    )
    return Instance(
        step_fn,
        inst.module,
        (*inst.args, *targets),
        state,
        inst.sizes,
        inst.attr_names,
        inst.kwargs,
        namespace=namespace,
    )


def _loss_words(namespace: Any, loss_fn: Any) -> str:
    if loss_fn is None:
        return "mean of the output (default)"
    if _hook(namespace, "loss_fn") is not None:
        return "loss_fn of the model file"
    return f"get_loss() of the model file ({type(loss_fn).__name__})"


def describe_optimizer(spec: OptimizerSpec) -> str:
    """The optimizer in words, e.g. ``adamw(lr=0.001, betas=(0.9, 0.999), ...)``.

    >>> describe_optimizer(OptimizerSpec("sgd", lr=0.1, momentum=0.9))
    'sgd(lr=0.1, momentum=0.9)'
    """
    parts = [f"lr={spec.lr:g}"]
    if spec.kind == "sgd":
        if spec.momentum:
            parts.append(f"momentum={spec.momentum:g}")
        if spec.dampening:
            parts.append(f"dampening={spec.dampening:g}")
        if spec.nesterov:
            parts.append("nesterov")
    else:
        parts.append(f"betas=({spec.betas[0]:g}, {spec.betas[1]:g})")
        parts.append(f"eps={spec.eps:g}")
    if spec.weight_decay:
        parts.append(f"weight_decay={spec.weight_decay:g}")
    if spec.fused:
        parts.append("fused")
    return f"{spec.kind}({', '.join(parts)})"


def _apply_updates(
    spec: OptimizerSpec,
    params: Sequence[tuple[str, Any]],
    grads: Sequence[Any],
    slots: Sequence[tuple[str, ...]],
    state: dict[str, Any],
) -> tuple[Any, ...]:
    import torch

    new_params: list[Any] = []
    new_state: list[Any] = []
    with torch.no_grad():
        for (_, p), g, keys in zip(params, grads, slots, strict=False):
            if g is None:
                continue
            # a DTensor's shard (tensor parallelism): each rank updates its own shard
            p2, s2 = _update(spec, local_shard(p), local_shard(g), [state[k] for k in keys])
            new_params.append(p2)
            new_state.extend(s2)
    return (*new_params, *new_state)
