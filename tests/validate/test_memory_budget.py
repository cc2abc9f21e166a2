"""The validation memory (Note [Validation memory]): a fixed pool, 1 GiB by default,
of which the executor may use half and a real reference run a quarter, so one file's
analysis stays under about 1 GiB of peak RSS; ``SOLAR_VALIDATION_MEMORY`` (MiB, or
``available``) overrides it (issue 17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.diagnostics import UsageError
from solar.frontends.kit import reference_budget_bytes
from solar.validate.memory import (
    VALIDATION_MEMORY_BYTES,
    VALIDATION_MEMORY_ENV,
    memory_budget_bytes,
    validation_memory_bytes,
)

MIB = 2**20


def test_default_pool_caps_executor_and_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VALIDATION_MEMORY_ENV, raising=False)
    assert validation_memory_bytes() == VALIDATION_MEMORY_BYTES == 1024 * MIB
    assert 0 < memory_budget_bytes() <= 512 * MIB
    assert 0 < reference_budget_bytes() <= 256 * MIB
    # an explicit reference budget is taken as given
    assert reference_budget_bytes(3 * 2**30) == 3 * 2**30


def test_pool_in_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VALIDATION_MEMORY_ENV, " 200 ")
    assert validation_memory_bytes() == 200 * MIB
    uncapped = memory_budget_bytes(capped=False)
    assert memory_budget_bytes() == min(100 * MIB, uncapped)
    assert reference_budget_bytes() == min(50 * MIB, memory_budget_bytes(0.25, capped=False))


def test_available_lifts_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VALIDATION_MEMORY_ENV, "Available")
    assert validation_memory_bytes() is None
    if memory_budget_bytes(capped=False) < 2 * VALIDATION_MEMORY_BYTES:
        pytest.skip("too little memory available to tell the capped budget from the uncapped")
    assert memory_budget_bytes() > VALIDATION_MEMORY_BYTES // 2


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "1e30", "lots", "1 GiB"])
def test_malformed_pool_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(VALIDATION_MEMORY_ENV, value)
    with pytest.raises(UsageError) as info:
        memory_budget_bytes()
    assert info.value.code == "E0905"
    assert VALIDATION_MEMORY_ENV in info.value.message


# A model file whose full-size run (4 MiB input, 16 MiB activations) is over a 32 MiB
# pool's quarter (8 MiB) but within the machine's.
_MLP = """
import torch
import torch.nn as nn

BATCH = 1024
HIDDEN = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(BATCH, HIDDEN)]
"""


@pytest.mark.torch
def test_the_pool_decides_full_or_reduced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    from solar.pipeline import AnalyzeOptions, analyze

    path = tmp_path / "mlp.py"
    path.write_text(_MLP)
    monkeypatch.setenv(VALIDATION_MEMORY_ENV, "32")
    small = analyze(path, AnalyzeOptions()).validation
    assert small.status == "passed", small
    assert small.strategy == "reduced-sizes"
    assert small.reason.startswith("scaled BATCH 1024->"), small.reason
    monkeypatch.setenv(VALIDATION_MEMORY_ENV, "available")
    full = analyze(path, AnalyzeOptions()).validation
    assert full.status == "passed", full
    assert full.strategy == "full"
