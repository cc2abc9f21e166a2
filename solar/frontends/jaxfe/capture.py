"""Load a JAX/Flax program file and capture it as a closed jaxpr over abstract values.

Contract: ``path -> JaxCapture``. The file defines either a function (``f``, or the one
named by ``entry``) or a Flax module (linen ``class Model(nn.Module)`` or an
``nnx.Module``), plus ``get_inputs()`` (and optionally ``get_init_inputs()``, the
module's constructor arguments). ``get_inputs()`` runs once, seeded; its array leaves
are the traced inputs ``x0, x1, ...`` and its Python scalars are static arguments.
The program itself is traced by `jax.make_jaxpr` on `jax.ShapeDtypeStruct` values, and
Flax parameters get their shapes from `jax.eval_shape` / `nnx.eval_shape`, so capture
never runs the model at full size. Parameters are named ``p_<path>`` (path joined by
``_``, the linen ``params`` collection and nnx ``.value`` dropped).

Every call into user code goes through `user_code`, which turns any exception into a
`FrontendError` naming what failed (never a traceback). Error codes (stable):

=====  ====================================================================
E0520  the program file is missing or not a ``.py`` file
E0521  user code raised (import, ``get_inputs``, constructor, tracing)
E0522  ``get_inputs`` is missing or returned something unusable
E0523  no entry point (no ``f``, no ``Model``, or the named entry is missing)
E0524  the ``module:function`` entry's module cannot be imported
E0525  an output leaf is not an array
E0526  the program branches on traced values (Python control flow on data)
E0527  jax or flax is not installed
=====  ====================================================================
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import random
import re
import types
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe.core import DTYPES
from solar.frontends.kit import (
    guard_user_code,
    import_model_file,
    input_name,
    module_int_constants,
    output_name,
    param_name,
    sanitize_name,
    user_frames,
)

__all__ = [
    "CaptureKind",
    "JaxCapture",
    "is_jax_file",
    "require_jax",
    "trace_function",
    "trace_jax_file",
    "user_code",
]

CaptureKind = Literal["function", "linen", "nnx"]
SEED = 0


@dataclass(frozen=True, slots=True)
class JaxCapture:
    """A captured JAX program.

    Attributes:
        name: program name (the file stem).
        kind: ``"function"``, ``"linen"`` or ``"nnx"``.
        closed_jaxpr: the `jax.core.ClosedJaxpr` over ``(params..., inputs...)``.
        arg_names: IR name of each jaxpr input (params first, then inputs); ``None`` for a
            leaf the IR cannot represent (a PRNG key).
        n_params: how many leading jaxpr inputs are parameters.
        output_names: IR names of the flattened outputs (``y0``...).
        flat_fn: ``(params..., inputs...) -> tuple of output arrays`` (jit-able).
        abstract_args: `jax.ShapeDtypeStruct` of every jaxpr input.
        input_values: the concrete ``get_inputs()`` arrays (seeded), in order.
        init_params: builds the concrete parameter leaves (from ``PRNGKey(0)``).
        path: the program file.
        sizes: the file's module-level integer constants (its sizes), overrides applied;
            empty for a live function.
    """

    name: str
    kind: CaptureKind
    closed_jaxpr: Any = field(repr=False)
    arg_names: tuple[str | None, ...]
    n_params: int
    output_names: tuple[str, ...]
    flat_fn: Callable[..., tuple[Any, ...]] = field(repr=False)
    abstract_args: tuple[Any, ...] = field(repr=False)
    input_values: tuple[np.ndarray, ...] = field(repr=False)
    init_params: Callable[[], tuple[Any, ...]] = field(repr=False)
    path: Path | None = None
    sizes: Mapping[str, int] = field(default_factory=dict)

    @property
    def input_names(self) -> tuple[str, ...]:
        """IR names of the ``get_inputs()`` arrays."""
        return tuple(n for n in self.arg_names[self.n_params :] if n is not None)

    @property
    def param_names(self) -> tuple[str, ...]:
        """IR names of the parameters."""
        return tuple(n for n in self.arg_names[: self.n_params] if n is not None)


def require_jax() -> Any:
    """Import jax, or raise `FrontendError` E0527."""
    try:
        import jax
    except ImportError as err:
        raise FrontendError(
            "the JAX frontend needs jax (pip install 'solar-sol[jax]')", code="E0527"
        ) from err
    return jax


def _explain(what: str, err: Exception) -> FrontendError | None:
    """Python control flow on a traced value: E0526 with what to use instead."""
    name = type(err).__name__
    if "Concretization" not in name and "TracerBool" not in name and "TracerInteger" not in name:
        return None
    return FrontendError(
        f"{what}: the program branches on traced values ({name})",
        code="E0526",
        notes=(
            *user_frames(err),
            "use jax.lax.cond/jnp.where, or make the value a static Python scalar",
        ),
    )


def user_code(what: str, code: str = "E0521") -> AbstractContextManager[None]:
    """Run user code; any exception it raises becomes `FrontendError` ``code``
    (`solar.frontends.kit.guard_user_code`, the one gate of every frontend).

    Raises:
        FrontendError: with the last user frames and the exception message as notes.
    """
    return guard_user_code(what, code=code, explain=_explain, first_line=True)


_IMPORT_RE = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_][\w]*)", re.MULTILINE)


def is_jax_file(path: str | Path) -> bool:
    """Heuristic for ``--frontend auto``: the file imports jax or flax and not torch.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
    ...     _ = fh.write("import jax.numpy as jnp\\n")
    >>> is_jax_file(fh.name)
    True
    >>> os.unlink(fh.name)
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    roots = set(_IMPORT_RE.findall(text))
    return bool(roots & {"jax", "flax"}) and "torch" not in roots


def _seed() -> None:
    np.random.seed(SEED)
    random.seed(SEED)


def _resolve_entry(module: types.ModuleType, path: Path, entry: str | None) -> Any:
    if entry is None:
        for name in ("f", "Model"):
            target = getattr(module, name, None)
            if target is not None:
                return target
        raise FrontendError(
            f"{path.name} defines neither `f` nor `Model`",
            code="E0523",
            notes=(
                "a JAX program file defines `f(*inputs)` (or a Flax `Model`) and "
                "`get_inputs()`; or pass --entry NAME",
            ),
        )
    mod_name, _, attr = entry.rpartition(":")
    source = module
    if mod_name and mod_name != path.stem:
        with user_code(f"importing {mod_name}", code="E0524"):
            source = importlib.import_module(mod_name)
    target = getattr(source, attr, None)
    if target is None:
        raise FrontendError(f"entry `{entry}` not found", code="E0523")
    return target


def _kind(target: Any) -> CaptureKind:
    with contextlib.suppress(ImportError):
        from flax import linen, nnx

        if (isinstance(target, type) and issubclass(target, linen.Module)) or isinstance(
            target, linen.Module
        ):
            return "linen"
        if (isinstance(target, type) and issubclass(target, nnx.Module)) or isinstance(
            target, nnx.Module
        ):
            return "nnx"
    if not callable(target):
        raise FrontendError(f"entry {target!r} is not callable", code="E0523")
    return "function"


def _is_array(x: Any) -> bool:
    import jax

    return isinstance(x, np.ndarray | np.generic | jax.Array)


def _path_name(path: tuple[Any, ...], drop_first: str | None) -> str:
    parts: list[str] = []
    for k in path:
        key = getattr(k, "key", None)
        if key is None:
            key = getattr(k, "idx", None)
        if key is None:
            key = getattr(k, "name", None)
        if key == "value" and type(k).__name__ == "GetAttrKey":
            continue
        parts.append(str(key))
    if drop_first is not None and parts and parts[0] == drop_first:
        parts = parts[1:]
    return sanitize_name(param_name("_".join(parts)))


def trace_jax_file(
    path: str | Path, *, entry: str | None = None, overrides: Mapping[str, int] | None = None
) -> JaxCapture:
    """Load a JAX program file and capture it with `jax.make_jaxpr` on abstract values.

    Args:
        path: the program file.
        entry: the function or Flax module to capture (``"name"`` in the file, or
            ``"module:name"``); default ``f``, else ``Model``.
        overrides: module-level integer constants (sizes) to replace before
            ``get_inputs()`` and the constructor run.

    Returns:
        The capture.

    Raises:
        FrontendError: E0520-E0527 (see the module docstring).
    """
    require_jax()
    path = Path(path)
    module = import_model_file(
        path,
        kind="program file",
        code="E0520",
        user_code=user_code,
        overrides=(overrides or {}).items(),
        rebind=False,  # jit caches made at import would keep the old sizes
    )
    target = _resolve_entry(module, path, entry)
    get_inputs = getattr(module, "get_inputs", None)
    if not callable(get_inputs):
        raise FrontendError(f"{path.name} has no `get_inputs()`", code="E0522")
    with user_code("get_inputs()"):
        _seed()
        raw = get_inputs()
    args = tuple(raw) if isinstance(raw, list | tuple) else (raw,)
    return capture(
        target,
        args,
        init_args=_init_args(module),
        name=path.stem,
        path=path,
        sizes=module_int_constants(module),
    )


def trace_function(
    target: Any, inputs: Sequence[Any], *, init_args: Sequence[Any] = (), name: str = "fn"
) -> JaxCapture:
    """Capture a live function or Flax module on example inputs (the Python API).

    Args:
        target: a function, a Flax linen module (class or instance) or an nnx module class.
        inputs: its positional arguments; array leaves are traced, other leaves static.
        init_args: constructor arguments when ``target`` is a module class.
        name: the program name.

    Returns:
        The capture.

    Raises:
        FrontendError: E0521-E0527.
    """
    require_jax()
    return capture(target, tuple(inputs), init_args=tuple(init_args), name=name, path=None)


def capture(
    target: Any,
    args: tuple[Any, ...],
    *,
    init_args: tuple[Any, ...],
    name: str,
    path: Path | None,
    sizes: Mapping[str, int] | None = None,
) -> JaxCapture:
    """Capture ``target(*args)``: abstract parameters, then `jax.make_jaxpr`."""
    jax = require_jax()
    kind = _kind(target)
    leaves, treedef = jax.tree_util.tree_flatten(args)
    traced = [k for k, leaf in enumerate(leaves) if _is_array(leaf)]
    if not traced:
        raise FrontendError("get_inputs() returned no arrays", code="E0522")
    values = tuple(np.asarray(leaves[k]) for k in traced)

    def rebuild(flat_inputs: tuple[Any, ...]) -> tuple[Any, ...]:
        full = list(leaves)
        for k, v in zip(traced, flat_inputs, strict=True):
            full[k] = v
        return tuple(jax.tree_util.tree_unflatten(treedef, full))

    abstract_inputs = tuple(jax.ShapeDtypeStruct(v.shape, v.dtype) for v in values)
    call, abstract_params, param_names, init_params = _bind_target(
        jax, target, kind, init_args, rebuild, values
    )
    n_params = len(abstract_params)

    def flat_fn(*flat: Any) -> tuple[Any, ...]:
        out = call(flat[:n_params], rebuild(tuple(flat[n_params:])))
        outs = jax.tree_util.tree_leaves(out)
        for o in outs:
            if not hasattr(o, "shape"):
                raise FrontendError(
                    f"the program returned a {type(o).__name__}, not an array", code="E0525"
                )
        return tuple(outs)

    abstract = (*abstract_params, *abstract_inputs)
    with user_code(f"tracing {name}"):
        closed = jax.make_jaxpr(flat_fn)(*abstract)
    input_names = _representable(
        [input_name(k) for k in range(len(abstract_inputs))], abstract_inputs
    )
    output_names = tuple(output_name(k) for k in range(len(closed.jaxpr.outvars)))
    return JaxCapture(
        name=sanitize_name(name),
        kind=kind,
        closed_jaxpr=closed,
        arg_names=(*param_names, *input_names),
        n_params=n_params,
        output_names=output_names,
        flat_fn=flat_fn,
        abstract_args=abstract,
        input_values=values,
        init_params=init_params,
        path=path,
        sizes=dict(sizes or {}),
    )


def _init_args(module: types.ModuleType) -> tuple[Any, ...]:
    get_init = getattr(module, "get_init_inputs", None)
    if not callable(get_init):
        return ()
    with user_code("get_init_inputs()"):
        value = get_init()
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def _bind_target(
    jax: Any,
    target: Any,
    kind: CaptureKind,
    init_args: tuple[Any, ...],
    rebuild: Callable[[tuple[Any, ...]], tuple[Any, ...]],
    values: tuple[np.ndarray, ...],
) -> tuple[
    Callable[[tuple[Any, ...], tuple[Any, ...]], Any],
    tuple[Any, ...],
    tuple[str | None, ...],
    Callable[[], tuple[Any, ...]],
]:
    """``(call(params, args), abstract params, param names, concrete params builder)``."""
    if kind == "function":
        return (lambda _p, a: target(*a)), (), (), lambda: ()
    if kind == "linen":
        return _bind_linen(jax, target, init_args, rebuild, values)
    return _bind_nnx(jax, target, init_args)


def _bind_linen(
    jax: Any,
    target: Any,
    init_args: tuple[Any, ...],
    rebuild: Callable[[tuple[Any, ...]], tuple[Any, ...]],
    values: tuple[np.ndarray, ...],
) -> tuple[Any, ...]:
    abstract_inputs = tuple(jax.ShapeDtypeStruct(v.shape, v.dtype) for v in values)
    with user_code("Model(*get_init_inputs())"):
        model = target(*init_args) if isinstance(target, type) else target

    def init(key: Any, *flat_inputs: Any) -> Any:
        return model.init({"params": key, "dropout": key}, *rebuild(flat_inputs))

    key = jax.random.PRNGKey(SEED)
    with user_code("Model.init (abstract)"):
        variables = jax.eval_shape(init, key, *abstract_inputs)
    with_paths, vtree = jax.tree_util.tree_flatten_with_path(variables)
    names = _unique([_path_name(p, "params") for p, _ in with_paths])
    abstract = tuple(leaf for _, leaf in with_paths)

    # Note [Mutable collections]: a module that updates a non-``params`` collection as it
    # runs (BatchNorm in training mode updates ``batch_stats``) raises on an immutable
    # apply; the updated collections are a side effect, not an output, as in nnx (whose
    # call updates the module's state in place), so they are dropped (dead work).
    mutable = [c for c in variables if c != "params"]

    def call(params: tuple[Any, ...], args: tuple[Any, ...]) -> Any:
        v = jax.tree_util.tree_unflatten(vtree, list(params))
        if not mutable:
            return model.apply(v, *args)
        out, _updated = model.apply(v, *args, mutable=mutable)
        return out

    def concrete() -> tuple[Any, ...]:
        # Initialisers are PRNG-heavy; LLVM -O0 compiles them ~10x faster, same values.
        with user_code("Model.init"):
            compiled = (
                jax.jit(init)
                .lower(key, *values)
                .compile(compiler_options={"xla_backend_optimization_level": 0})
            )
            real = compiled(key, *values)
        return tuple(jax.tree_util.tree_leaves(real))

    return call, abstract, _representable(names, abstract), concrete


def _bind_nnx(jax: Any, target: Any, init_args: tuple[Any, ...]) -> tuple[Any, ...]:
    from flax import nnx

    def build() -> Any:
        if not isinstance(target, type):
            return target
        init: Any = cast(Any, target).__init__
        takes_rngs = "rngs" in inspect.signature(init).parameters
        if takes_rngs:
            return target(*init_args, rngs=nnx.Rngs(SEED))
        return target(*init_args)

    with user_code("Model(*get_init_inputs(), rngs=nnx.Rngs(0)) (abstract)"):
        abstract_model = nnx.eval_shape(build)
    graphdef, state = nnx.split(abstract_model)
    with_paths, stree = jax.tree_util.tree_flatten_with_path(state)
    names = _unique([_path_name(p, None) for p, _ in with_paths])
    abstract = tuple(jax.ShapeDtypeStruct(leaf.shape, leaf.dtype) for _, leaf in with_paths)

    def call(params: tuple[Any, ...], args: tuple[Any, ...]) -> Any:
        return nnx.merge(graphdef, jax.tree_util.tree_unflatten(stree, list(params)))(*args)

    def concrete() -> tuple[Any, ...]:
        with user_code("Model(*get_init_inputs(), rngs=nnx.Rngs(0))"):
            _, real = nnx.split(build())
        return tuple(jax.tree_util.tree_leaves(real))

    return call, abstract, _representable(names, abstract), concrete


def _representable(names: list[str], abstract: tuple[Any, ...]) -> tuple[str | None, ...]:
    return tuple(
        n if str(a.dtype) in DTYPES else None for n, a in zip(names, abstract, strict=True)
    )


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if k == 0 else f"{n}_{k}")
    return out
