"""The frontend registry and the ``auto`` choice.

Contract: ``FRONTENDS`` maps each `FrontendName` to a zero-argument factory of its
`Frontend`; `get_frontend` resolves a choice for a file, or for ``--entry`` without
one, and `get_module_frontend` for a live module (the Python API): every source
reaches its frontend through this table. The factories import the frontend's package
only when called, so analysing an ``.alir`` file never imports the PyTorch or JAX
frontends (a cost of seconds, even without torch installed). ``auto`` picks ``ir``
for ``.alir`` files, ``jax`` for files that import jax/flax and not torch, otherwise
``torch``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from pathlib import Path

from solar.diagnostics import UsageError
from solar.frontends.protocol import Frontend, ModuleFrontend
from solar.options import FRONTEND_NAMES, FrontendChoice, FrontendName

__all__ = ["FRONTENDS", "IMPORTING_FRONTENDS", "detect_frontend", "get_frontend",
           "get_module_frontend"]


def _ir() -> Frontend:
    from solar.frontends.ir import IRFrontend

    return IRFrontend()


def _torch() -> ModuleFrontend:
    from solar.frontends.pytorch import TorchFrontend

    return TorchFrontend()


def _jax() -> Frontend:
    from solar.frontends.jaxfe import JaxFrontend

    return JaxFrontend()


def _llm() -> Frontend:
    from solar.frontends.llm import LLMFrontend

    return LLMFrontend()


FRONTENDS: Mapping[FrontendName, Callable[[], Frontend]] = {
    "torch": _torch,
    "jax": _jax,
    "llm": _llm,
    "ir": _ir,
}

IMPORTING_FRONTENDS: Mapping[FrontendName, Callable[[], ModuleFrontend]] = {"torch": _torch}
"""The frontends that take ``--entry package.module:attr`` without a file, and live
modules (`ModuleFrontend`)."""


def _mentions_jax(path: Path) -> bool:
    """False only if ``path`` cannot import jax or flax (neither word occurs in it)."""
    try:
        text = path.read_bytes()
    except OSError:
        return True  # let `is_jax_file` decide (and the loader report the error)
    return b"jax" in text or b"flax" in text


def detect_frontend(path: Path) -> FrontendName:
    """The frontend ``auto`` picks for ``path``."""
    if path.suffix == ".alir":
        return "ir"
    if importlib.util.find_spec("jax") is not None and _mentions_jax(path):
        from solar.frontends.jaxfe import is_jax_file  # the JAX frontend: ~0.05 s to import

        if is_jax_file(path):
            return "jax"
    return "torch"


def get_frontend(choice: FrontendChoice, path: Path | None) -> Frontend:
    """The frontend ``choice`` names, or the one ``auto`` picks for ``path``; with
    ``path=None`` (``--entry package.module:attr``) one of `IMPORTING_FRONTENDS`.

    Raises:
        UsageError: E0904 unknown name (the message lists the valid ones); E0915 no
            file and a frontend that cannot import an entry.

    >>> get_frontend("auto", Path("matmul.alir")).name
    'ir'
    """
    if path is None:
        return get_module_frontend(choice)
    name = detect_frontend(path) if choice == "auto" else choice
    for known, factory in FRONTENDS.items():
        if known == name:
            return factory()
    raise UsageError(
        f"unknown frontend `{name}`; valid: auto, {', '.join(FRONTEND_NAMES)}", code="E0904"
    )


def get_module_frontend(choice: FrontendChoice) -> ModuleFrontend:
    """The frontend of an imported entry or a live module (``auto``: PyTorch's).

    Raises:
        UsageError: E0915 ``choice`` cannot import an entry or take a live module.
    """
    name = "torch" if choice == "auto" else choice
    for known, factory in IMPORTING_FRONTENDS.items():
        if known == name:
            return factory()
    raise UsageError(
        "give a model file, or --entry package.module:attr (PyTorch) without one",
        code="E0915",
    )
