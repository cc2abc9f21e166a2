"""A built program and the one gate into user code: `Instance`, `user_code`, the seed.

Contract: the leaf the PyTorch loader, the batch cut and the training step share (so
none of them imports another to reach these). `user_code` is the single place where
arbitrary exceptions from the user's code are caught and turned into `FrontendError`
(E0501); `seed_everything` makes every real build reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from solar.diagnostics import FrontendError
from solar.frontends.kit import guard_user_code, user_frames

__all__ = ["SEED", "Instance", "seed_everything", "user_code"]

SEED = 0
"""The seed of every real build (torch, numpy and ``random``)."""


@dataclass(slots=True)
class Instance:
    """A built program ready to run.

    Attributes:
        fn: the callable to run (a module, a function, or a state-swapping wrapper).
        module: the root ``nn.Module`` if any (for module-path names).
        args: positional inputs.
        state: parameters and buffers by state_dict name (tensors as passed to ``fn``).
        sizes: module-level integer constants of the model file.
        attr_names: ``id(tensor) -> attribute path`` for plain tensor attributes.
        kwargs: keyword inputs (their tensors are program inputs after ``args``'s).
        namespace: the imported model file (its optional training hooks), if any.
    """

    fn: Callable[..., Any]
    module: Any
    args: tuple[Any, ...]
    state: dict[str, Any]
    sizes: dict[str, int]
    attr_names: dict[int, str]
    kwargs: dict[str, Any] = field(default_factory=dict)
    namespace: Any = None

    def call(self) -> Any:
        """Run the program on its inputs."""
        return self.fn(*self.args, **self.kwargs)

    def input_tree(self) -> list[Any]:
        """The inputs as one pytree: the positional ones, then the keyword dict.

        Its leaves, in ``tree_flatten`` order, are the program inputs ``x0, x1, ...``.
        """
        return [*self.args, self.kwargs] if self.kwargs else list(self.args)


def seed_everything(seed: int = SEED) -> None:
    """Seed torch, numpy and ``random`` so model and inputs are reproducible."""
    import numpy as np
    import torch

    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def _explain(what: str, err: Exception) -> FrontendError | None:
    """A backward under the inference capture: say how to bound the training step."""
    if "does not require grad" not in str(err):
        return None
    name = type(err).__name__
    return FrontendError(
        f"{what} raised {name}",
        code="E0501",
        notes=(
            *user_frames(err),
            f"{name}: {err}",
            "the program runs a backward: bound a training step with --train (docs/training.md)",
        ),
    )


def user_code(what: str) -> AbstractContextManager[None]:
    """Run user code; any exception it raises becomes `FrontendError` E0501
    (`solar.frontends.kit.guard_user_code`, the one gate of every frontend).

    Raises:
        FrontendError: E0501 with the user traceback's last frames as notes.
    """
    return guard_user_code(what, code="E0501", explain=_explain)
