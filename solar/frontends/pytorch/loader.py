"""Load the user's program: a model file, a plain function, or a live module.

Contract: `ProgramSource` says where a program comes from; `instantiate(source,
fake_mode=...)` runs the user's code (seeded, deterministic) and returns an
`Instance`: the callable, its arguments, and the named parameters/buffers. With a
``fake_mode`` nothing is allocated: the model and its inputs are built as
FakeTensors. Every call into user code goes through `user_code`, the single place
where arbitrary exceptions are caught and turned into `FrontendError` (E0501).

Model-file convention (KernelBench): ``class Model(nn.Module)``, ``get_inputs()``,
optionally ``get_init_inputs()``; sizes are module-level integer constants, which
`ProgramSource.overrides` can replace before the entry points run.

Error codes: E0501 user code raised; E0502 entry point missing; E0503 entry point
returned an unexpected value; E0504 model file missing or not Python; E0507 inputs
file unreadable; E0513 the entry cannot be built or called with the arguments given
(`solar.frontends.pytorch.entry`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solar.diagnostics import FrontendError, exception_text
from solar.frontends.inputs import InputShape
from solar.frontends.kit import (
    check_overrides,
    import_model_file,
    module_int_constants,
)
from solar.frontends.pytorch.batch import cut_batch
from solar.frontends.pytorch.entry import build_entry, check_call, entry_kind
from solar.frontends.pytorch.inputs import (
    check_input_tensors,
    inputs_from_shapes,
    load_inputs_file,
)
from solar.frontends.pytorch.instance import Instance, seed_everything, user_code
from solar.frontends.pytorch.train_step import TrainStep, training_instance

__all__ = [
    "REAL_BUDGET_BYTES",
    "Instance",
    "ProgramSource",
    "build_real_within_budget",
    "instantiate",
    "meta_to_fake",
    "module_int_constants",
    "seed_everything",
    "user_code",
]


@dataclass(frozen=True, slots=True)
class ProgramSource:
    """Where a program comes from, enough to rebuild it (fake or real) any number of times.

    Attributes:
        name: a readable program name (file stem, function or class name).
        path: the model file (model-file and function-entry modes).
        entry: the function or ``nn.Module`` class to run instead of ``Model`` (``"attr"``
            or ``"pkg.mod:attr"``); a class is built from ``get_init_inputs()`` if the
            file has one, else with no arguments.
        inputs_path: ``.npz``/``.pt`` file with the entry's inputs (see `load_inputs_file`).
        input_shapes: inputs described by shape (``--input-shape``), drawn seeded.
        overrides: module-level integer constants to replace before running.
        target: a live ``nn.Module`` or callable (Python API mode).
        example_inputs: positional inputs for ``target``.
        example_kwargs: keyword inputs for ``target`` (name, value), in call order.
        train: keep modules in training mode (default: ``eval()``, the inference forward).
        batch: cut the inputs' leading (batch) dimension to this size after building
            them (`solar.frontends.pytorch.batch`; ``None``: as built).
        step: analyse one training step around the program (solar.frontends.pytorch.
            train_step); implies ``train``.
        float64: build a real instance in float64 (a copy of the module, its floating
            inputs and a step's targets and optimizer state cast, values unchanged), for
            validation's float64 re-check (Note [Float64 re-check] in solar/pipeline/validation.py).
        transform: applied to the built ``nn.Module`` before its inputs are built (a
            derived tensor-parallel rank: `solar.frontends.pytorch.derive_plan_capture`).
    """

    name: str
    path: Path | None = None
    entry: str | None = None
    entry_args: str | None = None
    inputs_path: Path | None = None
    input_shapes: tuple[InputShape, ...] = ()
    overrides: tuple[tuple[str, int], ...] = ()
    target: Any = field(default=None, compare=False)
    example_inputs: tuple[Any, ...] = field(default=(), compare=False)
    example_kwargs: tuple[tuple[str, Any], ...] = field(default=(), compare=False)
    train: bool = False
    batch: int | None = None
    step: TrainStep | None = None
    namespace: Any = field(default=None, compare=False)
    float64: bool = False
    transform: Callable[[Any], Any] | None = field(default=None, compare=False)


def _entry_point(module: types.ModuleType, name: str, path: Path) -> Callable[..., Any]:
    from solar.frontends.pytorch.entry_hint import entry_notes

    fn = getattr(module, name, None)
    if fn is not None and not callable(fn):
        raise FrontendError(
            f"`{name}` in {path.name} is a {type(fn).__name__}, not a class or function",
            code="E0513",
        )
    if fn is None:
        raise FrontendError(
            f"{path.name} has no `{name}`", code="E0502", notes=entry_notes(module, name)
        )
    return fn  # type: ignore[no-any-return]


def _as_args(value: Any, what: str) -> tuple[Any, ...]:
    if isinstance(value, list | tuple):
        return tuple(value)
    raise FrontendError(
        f"{what} returned {type(value).__name__}, expected a list or tuple", code="E0503"
    )


def _tensor_attrs(root: Any) -> dict[int, str]:
    """``id -> path`` of plain tensor attributes (not parameters/buffers) of a module tree."""
    import torch

    names: dict[int, str] = {}
    if not isinstance(root, torch.nn.Module):
        return names
    for mod_name, mod in root.named_modules():
        for attr, val in vars(mod).items():
            if isinstance(val, torch.Tensor) and not attr.startswith("_"):
                names.setdefault(id(val), f"{mod_name}.{attr}" if mod_name else attr)
    return names


def _state(module: Any) -> dict[str, Any]:
    import torch

    if not isinstance(module, torch.nn.Module):
        return {}
    state: dict[str, Any] = dict(module.named_parameters())
    state.update(dict(module.named_buffers()))
    return state


def _import_source(source: ProgramSource) -> types.ModuleType:
    """The model file, or the ``pkg.mod`` of an ``entry="pkg.mod:fn"`` without a file,
    with the size constants of ``source.overrides`` rebound. (A CUDA torchvision beside
    CPU torch imports on every path: `solar.torchvision_shim`, installed by ``import solar``.)
    """
    if source.path is not None:
        return import_model_file(
            source.path,
            kind="model file",
            code="E0504",
            user_code=user_code,
            overrides=source.overrides,
        )
    if source.entry is None or ":" not in source.entry:
        raise FrontendError("no model file and no `module:function` entry", code="E0504")
    name = source.entry.rsplit(":", 1)[0]
    with user_code(f"importing {name}"):
        if "" not in sys.path and "." not in sys.path:
            sys.path.insert(0, "")  # like `python -m`: the working directory is importable
        module = importlib.import_module(name)
    return check_overrides(module, dict(source.overrides), name)


def _build_from_file(source: ProgramSource, fake_mode: Any) -> Instance:
    import torch

    module = _import_source(source)
    where = source.path if source.path is not None else Path(module.__name__)
    sizes = module_int_constants(module)
    ctx = fake_mode if fake_mode is not None else contextlib.nullcontext()
    attr = source.entry.rsplit(":", 1)[-1] if source.entry is not None else "Model"
    target = _entry_point(module, attr, where)
    kind = entry_kind(target, attr, entry_args=source.entry_args)
    get_init = getattr(module, "get_init_inputs", None)

    def init() -> tuple[Any, ...]:
        return _as_args(get_init(), "get_init_inputs()")  # type: ignore[misc]

    with ctx:
        model = build_entry(
            target,
            attr,
            kind=kind,
            entry_args=source.entry_args,
            init=init if callable(get_init) else None,
            user_code=user_code,
            seed=seed_everything,
        )
        if source.transform is not None:
            model = source.transform(model)
    args, kwargs = _entry_inputs(source, module, where, ctx, real=fake_mode is None)
    check_call(model, args, kwargs, what=f"{attr} on its {len(args) + len(kwargs)} input(s)")
    if fake_mode is not None and (source.inputs_path is not None or source.input_shapes):

        def conv(a: Any) -> Any:
            return fake_mode.from_tensor(a) if isinstance(a, torch.Tensor) else a

        args = tuple(conv(a) for a in args)
        kwargs = {k: conv(v) for k, v in kwargs.items()}
    if isinstance(model, torch.nn.Module) and not (source.train or source.step):
        model.eval()
    if not isinstance(model, torch.nn.Module):
        return Instance(model, None, args, {}, sizes, {}, kwargs, namespace=module)
    return Instance(
        model, model, args, _state(model), sizes, _tensor_attrs(model), kwargs, namespace=module
    )


def _entry_inputs(
    source: ProgramSource, module: types.ModuleType, where: Path, ctx: Any, *, real: bool
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The inputs: ``--inputs`` file, ``--input-shape`` specs, else ``get_inputs()``.

    Given inputs are made for real (the caller converts them for a fake capture); the
    file's ``get_inputs()`` runs under ``ctx`` like the model's construction.
    """
    if source.inputs_path is not None:
        return load_inputs_file(source.inputs_path)
    if source.input_shapes:
        return inputs_from_shapes(source.input_shapes)
    if not callable(getattr(module, "get_inputs", None)):
        raise FrontendError(
            f"{where.name} has no `get_inputs` and no inputs were given",
            code="E0502",
            notes=(
                "give the inputs with --inputs FILE (.pt/.npz) or --input-shape "
                "NAME=D0,D1,...:DTYPE, or define get_inputs() returning a list of tensors",
            ),
        )
    get_inputs = _entry_point(module, "get_inputs", where)
    with ctx, user_code("get_inputs()"):
        seed_everything()
        args = _as_args(get_inputs(), "get_inputs()")
    # a fake or meta build may put every tensor on the meta device; a real one needs values
    check_input_tensors("get_inputs()", args, {}, any_device=True, meta=not real)
    return args, {}


def meta_to_fake(built: Instance, source: ProgramSource, fake_mode: Any) -> Instance | None:
    """``built`` (on the meta device, whose forward could not run there) as an instance
    over ``fake_mode``'s CPU tensors, without building it again (Note [Model-file runs]
    in `solar.frontends.protocol`); ``None`` where that is not exact: a training step,
    batch cut or float64 build, a callable that is not a module, or a module holding a
    meta tensor besides its parameters and buffers (a plain attribute, a list of them).
    """
    import torch
    from torch.utils._pytree import tree_flatten

    module = built.module
    if source.step is not None or source.batch is not None or source.float64:
        return None
    if not isinstance(module, torch.nn.Module) or built.fn is not module:
        return None
    for mod in module.modules():
        held = [v for k, v in vars(mod).items() if k not in ("_parameters", "_buffers")]
        leaves, _ = tree_flatten(held)
        if any(isinstance(x, torch.Tensor) and x.device.type == "meta" for x in leaves):
            return None

    def conv(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        if x.device.type != "meta":
            return fake_mode.from_tensor(x)
        with fake_mode:
            t = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cpu")
        return t.requires_grad_(x.requires_grad)

    return _fake_wrap(built, fake_mode, conv)


def _fake_wrap(
    inst: Instance, fake_mode: Any, conv: Callable[[Any], Any] | None = None
) -> Instance:
    """Turn a real instance into a fake one: params and inputs via ``from_tensor``
    (or ``conv``)."""
    import torch

    from solar.frontends.pytorch.reparam import attributes_restored, swapped_state

    if conv is None:

        def conv(x: Any) -> Any:
            return fake_mode.from_tensor(x) if isinstance(x, torch.Tensor) else x

    args = tuple(torch.utils._pytree.tree_map(conv, a) for a in inst.args)
    kwargs = {k: torch.utils._pytree.tree_map(conv, v) for k, v in inst.kwargs.items()}
    if not inst.state:
        return Instance(
            inst.fn,
            inst.module,
            args,
            {},
            inst.sizes,
            inst.attr_names,
            kwargs,
            namespace=inst.namespace,
        )
    state = {k: conv(v) for k, v in inst.state.items()}
    module, originals = inst.module, dict(inst.state)

    def run(*a: Any, **kw: Any) -> Any:
        # not torch.func.functional_call: Note [Shared submodules] in reparam.py
        with swapped_state(module, originals, state), attributes_restored(module):
            return module(*a, **kw)

    return Instance(
        run, module, args, state, inst.sizes, inst.attr_names, kwargs, namespace=inst.namespace
    )


def instantiate(
    source: ProgramSource,
    *,
    fake_mode: Any = None,
    real_fallback: bool = True,
    within_budget: bool = False,
) -> Instance:
    """Build the program described by ``source`` (its inputs' batch cut to ``source.batch``;
    float64 if ``source.float64``; its training step if ``source.step``). Every build,
    fake, real or the real fallback of a fake one, goes through here, so none of these
    options is dropped on a fallback path.

    Args:
        source: where the program comes from.
        fake_mode: a ``FakeTensorMode`` (or `capture.MetaMode`) to build it without
            allocating, or ``None`` for real tensors (seeded, so two real builds are
            identical).
        real_fallback: when building under ``fake_mode`` fails, build it for real and
            convert (default); ``False`` re-raises instead.
        within_budget: a real build of a file fails fast past `REAL_BUDGET_BYTES`
            (`build_real_within_budget`: the fallback when fake tensors could not run it).

    Returns:
        The built `Instance`.

    Raises:
        FrontendError: E0501-E0504, E0507 (see module docstring), E0540/E0541 (the
            training step: solar.frontends.pytorch.train_step).
    """
    if within_budget and fake_mode is None and source.target is None:
        inst = build_real_within_budget(source)
    else:
        inst = _instantiate(source, fake_mode=fake_mode, real_fallback=real_fallback)
    if source.batch is not None:
        inst = cut_batch(inst, source.batch)
    if source.float64 and fake_mode is None:
        inst = _as_float64(inst)
    if source.step is None:
        return inst
    n_inputs = len(inst.args)
    inst = training_instance(inst, source.step, fake_mode=fake_mode)
    if source.float64 and fake_mode is None:  # the targets the step appended
        targets = tuple(_float64_tensor(a) for a in inst.args[n_inputs:])
        inst = dataclasses.replace(inst, args=(*inst.args[:n_inputs], *targets))
    return inst


def _float64_tensor(x: Any) -> Any:
    """A floating tensor as float64 (a new leaf, same ``requires_grad``); else ``x``."""
    import torch

    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.detach().to(torch.float64).requires_grad_(x.requires_grad)
    return x


def _as_float64(inst: Instance) -> Instance:
    """``inst`` in float64: a float64 copy of its module (the caller's module is left
    as it is) and its floating inputs cast; a function's own tensors stay as they are."""
    import copy

    import torch
    from torch.utils._pytree import tree_map

    args = tuple(tree_map(_float64_tensor, a) for a in inst.args)
    kwargs = {k: tree_map(_float64_tensor, v) for k, v in inst.kwargs.items()}
    if not isinstance(inst.module, torch.nn.Module) or inst.fn is not inst.module:
        return dataclasses.replace(inst, args=args, kwargs=kwargs)
    try:
        module = copy.deepcopy(inst.module).to(torch.float64)
    except (TypeError, RuntimeError, copy.Error) as err:  # an attribute deepcopy refuses
        raise FrontendError(
            f"the model cannot be copied to float64: {type(err).__name__}: "
            f"{exception_text(err)}",
            code="E0501",
        ) from err
    return dataclasses.replace(
        inst,
        fn=module,
        module=module,
        args=args,
        kwargs=kwargs,
        state=_state(module),
        attr_names=_tensor_attrs(module),
    )


def _instantiate(source: ProgramSource, *, fake_mode: Any, real_fallback: bool) -> Instance:
    import torch

    if source.target is not None:
        target = source.target
        if isinstance(target, torch.nn.Module) and not (source.train or source.step):
            target.eval()

        # Clone the example inputs so a program that mutates its inputs leaves the
        # caller's tensors (and later replays) untouched.
        def clone(a: Any) -> Any:
            return torch.utils._pytree.tree_map(
                lambda t: (
                    t.detach().clone().requires_grad_(t.requires_grad)
                    if isinstance(t, torch.Tensor)
                    else t
                ),
                a,
            )

        args = tuple(clone(a) for a in source.example_inputs)
        kwargs = {k: clone(v) for k, v in source.example_kwargs}
        module = target if isinstance(target, torch.nn.Module) else None
        inst = Instance(
            target,
            module,
            args,
            _state(target),
            {},
            _tensor_attrs(target),
            kwargs,
            namespace=source.namespace,
        )
        return _fake_wrap(inst, fake_mode) if fake_mode is not None else inst
    if fake_mode is None:
        return _build_from_file(source, None)
    try:
        return _build_from_file(source, fake_mode)
    except FrontendError as err:
        if err.code != "E0501" or not real_fallback:
            raise
        # Construction needed real values (e.g. an init that calls .item()): build it
        # for real, within the budget, and convert.
        return _fake_wrap(build_real_within_budget(source), fake_mode)


REAL_BUDGET_BYTES = 2 << 30
"""Largest allocation (bytes) a build with real tensors may make when the fake build
could not run it: inputs, parameters and whatever the model's own code allocates."""

_BUDGET_SLACK_BYTES = 1 << 30
"""Allowed on top of `REAL_BUDGET_BYTES` for what the build needs besides tensors
(imports, thread stacks, allocator arenas)."""


def build_real_within_budget(source: ProgramSource) -> Instance:
    """Build ``source`` with real tensors, failing fast past `REAL_BUDGET_BYTES`.

    The budget is enforced before anything is allocated (Note [Memory budget] in
    `solar.budget`), so a model whose ``__init__`` or ``get_inputs`` would take 40 GB
    fails at the allocation instead of exhausting the machine. `instantiate`
    (``within_budget=True``) applies the batch cut, float64 and the training step on
    top, so a capture that falls back to real tensors analyses the step asked for.

    Raises:
        FrontendError: E0505 over the budget; E0501-E0504, E0507 as `instantiate`.
    """
    from solar.budget import is_allocation_failure, memory_budget

    try:
        with memory_budget(REAL_BUDGET_BYTES + _BUDGET_SLACK_BYTES):
            return _build_from_file(source, None)
    except FrontendError as err:
        if err.code != "E0501" or not is_allocation_failure(err.__cause__):
            raise
        raise FrontendError(
            "building the program with real tensors needs more memory than the "
            f"{REAL_BUDGET_BYTES / 2**30:.0f} GiB budget",
            code="E0505",
            notes=(
                *err.notes,
                "fake (allocation-free) construction could not run it, e.g. an `.item()` "
                "in `__init__`; reduce the sizes in the model file",
            ),
        ) from err


def source_for_file(
    path: str | Path | None,
    *,
    entry: str | None = None,
    entry_args: str | None = None,
    inputs: str | Path | None = None,
    overrides: Mapping[str, int] | None = None,
    train: bool = False,
    input_shapes: tuple[InputShape, ...] = (),
    step: TrainStep | None = None,
) -> ProgramSource:
    """A `ProgramSource` for a model file, a function in it, or ``entry="pkg.mod:fn"``."""
    p = Path(path) if path is not None else None
    name = entry.rsplit(":", 1)[-1] if entry else (p.stem if p is not None else "program")
    return ProgramSource(
        name=name,
        path=p,
        entry=entry,
        entry_args=entry_args,
        inputs_path=Path(inputs) if inputs is not None else None,
        input_shapes=tuple(input_shapes),
        overrides=tuple(sorted((overrides or {}).items())),
        train=train,
        step=step,
    )
