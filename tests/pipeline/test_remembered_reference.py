"""`RememberedReference`: the reference run is made once, for preparation and validation."""

from __future__ import annotations

import pytest

from solar.diagnostics import FrontendError
from solar.frontends import ValidationPlan
from solar.ir import parse_program
from solar.pipeline.prepare import RememberedReference

PROGRAM = parse_program(
    "solar-ir 1\nprogram p\nsize N = 2\ninput x : f32[N]\noutput y : f32[N]\n"
    "kernel k {\n  for i in 0 .. N {\n    y[i] = x[i]\n  }\n}\n",
    filename="p.alir",
)


def test_the_plan_is_built_once() -> None:
    built: list[int] = []

    def build() -> ValidationPlan:
        built.append(1)
        return ValidationPlan(PROGRAM, {}, {})

    ref = RememberedReference(build)
    assert ref.plan is None
    first = ref()
    assert ref() is first and ref.plan is first and len(built) == 1
    ref.forget()  # validation plans again within more memory
    assert ref() is not first and len(built) == 2


def test_an_error_is_remembered_and_raised_again_until_forgotten() -> None:
    calls: list[int] = []

    def build() -> ValidationPlan:
        calls.append(1)
        if len(calls) == 1:
            raise FrontendError("no reduced size fits", code="E0511")
        return ValidationPlan(PROGRAM, {}, {})

    ref = RememberedReference(build)
    for _ in range(2):
        with pytest.raises(FrontendError) as err:
            ref()
        assert err.value.code == "E0511"
    assert len(calls) == 1 and ref.plan is None
    ref.forget()
    assert ref().program is PROGRAM and len(calls) == 2
