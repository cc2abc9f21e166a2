"""`AnalyzeOptions` derives what each stage reads; nothing is copied by hand or changed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from solar.diagnostics import UsageError
from solar.frontends import FrontendOptions, get_frontend, get_module_frontend
from solar.pipeline import AnalyzeOptions

DERIVED = {"op_fallback", "symbolic_sizes"}  # decided by the pipeline, not asked for


def test_every_frontend_option_is_an_analysis_option_with_its_default() -> None:
    analysis = {f.name: f for f in dataclasses.fields(AnalyzeOptions)}
    for f in dataclasses.fields(FrontendOptions):
        if f.name in DERIVED:
            continue
        assert f.name in analysis, f"FrontendOptions.{f.name} has no AnalyzeOptions field"
        ours = analysis[f.name]
        assert (ours.default, ours.default_factory) == (f.default, f.default_factory)


def test_frontend_options_carry_the_analysis_values() -> None:
    options = AnalyzeOptions(entry="pkg.mod:Model", inputs_file=Path("x.npz"), sizes={"N": 3},
                             train=True, train_step=True, optimizer="adamw",
                             reference_budget_bytes=2**20, time_budget_s=5.0, frontend="torch")
    front = options.frontend_options
    for f in dataclasses.fields(FrontendOptions):
        if f.name not in DERIVED:
            assert getattr(front, f.name) == getattr(options, f.name), f.name
    assert front.op_fallback and front.symbolic_sizes  # no distributed plan


@pytest.mark.parametrize(("choice", "fallback"), [("auto", True), ("torch", True),
                                                  ("llm", False), ("ir", False)])
def test_the_llm_fallback_follows_the_frontend_choice(choice: str, fallback: bool) -> None:
    options = AnalyzeOptions(frontend=choice)  # type: ignore[arg-type]
    assert options.frontend_options.op_fallback is fallback


def test_analysis_options_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        AnalyzeOptions().precision = "bf16"  # type: ignore[misc]


def test_the_registry_routes_entries_and_modules() -> None:
    assert get_frontend("auto", Path("m.alir")).name == "ir"
    assert get_frontend("auto", None).name == "torch"  # --entry pkg.mod:attr, no file
    assert get_module_frontend("auto").name == "torch"
    for choice in ("jax", "llm", "ir"):
        with pytest.raises(UsageError) as err:
            get_frontend(choice, None)  # type: ignore[arg-type]
        assert err.value.code == "E0915"
