"""Tests for loading hardware specs: names, paths, caching and every diagnostic code.

Bad specs are written to tmp_path as mutations of the bundled H100_SXM data, so
each case differs from a known-good spec in exactly the way under test.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from solar.diagnostics import HardwareSpecError
from solar.hw import (
    FIGURE_FIELDS,
    dump_hardware_spec,
    load_hardware_spec,
    validate_hardware_spec,
)


def _spec_data(name: str = "H100_SXM") -> dict[str, Any]:
    """A bundled spec as plain YAML-ready data, to mutate in error tests."""
    spec = load_hardware_spec(name)
    data: dict[str, Any] = spec.model_dump(mode="json", exclude_none=True, by_alias=True)
    return data


WriteSpec = Callable[[str | Mapping[str, Any]], Path]


@pytest.fixture
def write_spec(tmp_path: Path) -> WriteSpec:
    """Write YAML text (or data) to a fresh file under tmp_path; return its path."""
    counter = iter(range(1_000_000))

    def write(content: str | Mapping[str, Any]) -> Path:
        path = tmp_path / f"spec_{next(counter)}.yaml"
        text = content if isinstance(content, str) else yaml.safe_dump(dict(content))
        path.write_text(text, encoding="utf-8")
        return path

    return write


def _load_error(path: Path) -> HardwareSpecError:
    with pytest.raises(HardwareSpecError) as info:
        load_hardware_spec(path)
    return info.value


@pytest.mark.parametrize(
    "alias", ["H100_SXM", "h100_sxm", "h100-sxm", "H100-SXM", " h100 sxm ", "h100--sxm"]
)
def test_name_normalisation(alias: str) -> None:
    assert load_hardware_spec(alias) is load_hardware_spec("H100_SXM")


def test_unknown_name_suggests_close_match() -> None:
    with pytest.raises(HardwareSpecError) as info:
        load_hardware_spec("h100-sxn")
    err = info.value
    assert err.code == "E0401"
    assert "`H100_SXM`" in err.message
    assert any("MI300X" in note for note in err.notes), "lists the available names"


def test_unknown_name_without_close_match() -> None:
    with pytest.raises(HardwareSpecError) as info:
        load_hardware_spec("quantum-abacus")
    assert info.value.code == "E0401"
    assert "did you mean" not in info.value.message


def test_user_yaml_path_loads(write_spec: WriteSpec) -> None:
    data = _spec_data()
    data.update(name="My_Lab_GPU", display_name="lab box", measured=True)
    data["sources"] = [
        {"url": "calibration run on host lab-7", "edition": "2025-01-01", "fields": ["*"]}
    ]
    path = write_spec(data)
    spec = load_hardware_spec(str(path))
    assert spec.name == "My_Lab_GPU"
    assert spec.measured
    assert load_hardware_spec(path) is spec  # cached while the file is unchanged


def test_user_yaml_is_reread_after_edit(write_spec: WriteSpec) -> None:
    data = _spec_data()
    path = write_spec(data)
    first = load_hardware_spec(path)
    data["dram_bandwidth_bytes_per_s"] = 3.0e12
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert load_hardware_spec(path).dram_bandwidth_bytes_per_s == 3.0e12
    assert first.dram_bandwidth_bytes_per_s == 3.35e12


def test_missing_file_is_e0401(tmp_path: Path) -> None:
    err = _load_error(tmp_path / "nope.yaml")
    assert err.code == "E0401"
    assert "nope.yaml" in err.message


def test_exponent_floats_parse_as_numbers(
    write_spec: WriteSpec,
) -> None:
    text = dump_hardware_spec(load_hardware_spec("H100_SXM")).replace(
        "dram_bandwidth_bytes_per_s: 3350000000000.0", "dram_bandwidth_bytes_per_s: 335e10"
    )
    assert "335e10" in text
    assert load_hardware_spec(write_spec(text)).dram_bandwidth_bytes_per_s == 3.35e12


def test_unknown_key_is_e0403_with_line(write_spec: WriteSpec) -> None:
    text = dump_hardware_spec(load_hardware_spec("H100_SXM"))
    lines = text.splitlines()
    lines.insert(3, "bogus_field_bytes: 12")
    err = _load_error(write_spec("\n".join(lines) + "\n"))
    assert err.code == "E0403"
    assert "unknown key `bogus_field_bytes`" in err.message
    assert err.span is not None
    assert err.span.line == 4
    rendered = err.render()
    assert rendered.startswith("error[E0403]:")
    assert "bogus_field_bytes" in rendered
    assert ":4:1" in rendered


def test_every_bad_field_is_listed(write_spec: WriteSpec) -> None:
    data = _spec_data()
    data["extra_one"] = 1
    data["peak_flops_per_s"]["bf32"] = 1e12
    data["kind"] = "fpga"
    del data["dram_capacity_bytes"]
    err = _load_error(write_spec(data))
    assert err.code == "E0403"
    joined = "\n".join(err.notes)
    assert "unknown key `extra_one`" in joined
    assert "peak_flops_per_s.bf32" in joined
    assert "kind" in joined
    assert "dram_capacity_bytes: required key is missing" in joined
    assert "(and 3 more)" in err.message


def test_yaml_syntax_error_is_e0402(write_spec: WriteSpec) -> None:
    path = write_spec("name: X\npeak_flops_per_s: {bf16: 1e12\nvendor: [\n")
    err = _load_error(path)
    assert err.code == "E0402"
    assert str(path) in err.message
    assert err.span is not None
    assert f"{path}:" in err.render()


def test_duplicate_key_is_e0402(write_spec: WriteSpec) -> None:
    text = dump_hardware_spec(load_hardware_spec("H100_SXM")) + "sm_count: 144\n"
    err = _load_error(write_spec(text))
    assert err.code == "E0402"
    assert "duplicate key 'sm_count'" in err.message


def test_non_mapping_document_is_e0403(write_spec: WriteSpec) -> None:
    assert _load_error(write_spec("- just\n- a list\n")).code == "E0403"
    assert _load_error(write_spec("")).code == "E0403"


def test_missing_sources_is_an_error(write_spec: WriteSpec) -> None:
    data = _spec_data()
    data["sources"] = []
    assert _load_error(write_spec(data)).code == "E0403"
    del data["sources"]
    assert _load_error(write_spec(data)).code == "E0403"


Mutation = Callable[[dict[str, Any]], None]


def _set(*path: str | int, value: Any) -> Mutation:
    """A mutation that sets ``data[path...] = value``."""

    def mutate(data: dict[str, Any]) -> None:
        target: Any = data
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


def _del(*path: str) -> Mutation:
    """A mutation that deletes ``data[path...]``."""

    def mutate(data: dict[str, Any]) -> None:
        target: Any = data
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return mutate


_ALL_BUT_SM_COUNT = [f for f in FIGURE_FIELDS if f != "sm_count"]

# (id, mutations of the H100_SXM data, text expected in the diagnostic)
SANITY_CASES: list[tuple[str, tuple[Mutation, ...], str]] = [
    (
        "dense_equals_sparse",
        (
            _set("peak_flops_per_s", "bf16", value=1979e12),
            _set("peak_flops_per_s", "fp16", value=1979e12),
        ),
        "dense 1.979e+15 is not below the sparse figure",
    ),
    ("sparse_tf32_as_dense", (_set("peak_flops_per_s", "tf32", value=1978.8e12),), "tf32"),
    (
        "sparse_bf16_as_dense",
        (_set("peak_flops_per_s", "bf16", value=1979e12), _del("sparse_peak_flops_per_s", "bf16")),
        "peak_flops_per_s.bf16: 1.979e+15 exceeds peak_flops_per_s.fp16",
    ),
    ("fp8_above_fp4", (_set("peak_flops_per_s", "fp4", value=1000e12),), "fp8"),
    ("zero_bandwidth", (_set("dram_bandwidth_bytes_per_s", value=0),), "positive"),
    ("negative_peak", (_set("vector_flops_per_s", "fp32", value=-67e12),), "fp32"),
    ("gb_per_s_unit_slip", (_set("dram_bandwidth_bytes_per_s", value=3.35),), "check the unit"),
    ("ghz_unit_slip", (_set("clock_hz_tensor", value=1.83),), "clock_hz_tensor"),
    ("fp64_above_fp32", (_set("vector_flops_per_s", "fp64", value=134e12),), "fp64"),
    ("sparse_without_dense", (_set("sparse_peak_flops_per_s", "fp4", value=8e15),), "no dense"),
    ("l2_slower_than_dram", (_set("l2_bandwidth_bytes_per_s", value=1e12),), "upper estimate"),
    (
        "uncited_figure",
        (
            _set(
                "sources",
                value=[{"url": "https://x.test", "edition": "e", "fields": _ALL_BUT_SM_COUNT}],
            ),
        ),
        "sm_count: no source cites",
    ),
    (
        "unknown_cited_field",
        (_set("sources", 0, "fields", value=["*", "peak_flops_per_s.bf32"]),),
        "`peak_flops_per_s.bf32` names no figure",
    ),
    ("non_url_source", (_set("sources", 0, "url", value="the datasheet"),), "http(s) URL"),
]


@pytest.mark.parametrize(
    ("mutations", "expected"),
    [(m, e) for _, m, e in SANITY_CASES],
    ids=[n for n, _, _ in SANITY_CASES],
)
def test_sanity_errors_are_e0404(
    write_spec: WriteSpec, mutations: tuple[Mutation, ...], expected: str
) -> None:
    data = _spec_data()
    for mutate in mutations:
        mutate(data)
    err = _load_error(write_spec(data))
    assert err.code == "E0404", err.render()
    assert expected in err.message + "\n".join(err.notes)


def test_sanity_error_points_at_the_field(
    write_spec: WriteSpec,
) -> None:
    data = _spec_data()
    data["dram_bandwidth_bytes_per_s"] = 3.35
    path = write_spec(data)
    err = _load_error(path)
    assert err.span is not None
    line = path.read_text(encoding="utf-8").splitlines()[err.span.line - 1]
    assert line.startswith("dram_bandwidth_bytes_per_s:")


def test_validate_mapping_never_leaks_pydantic_errors() -> None:
    data = _spec_data()
    data["peak_flops_per_s"] = "fast"
    with pytest.raises(HardwareSpecError) as info:
        validate_hardware_spec(data, origin="calibration")
    assert info.value.code == "E0403"
    assert "calibration" in info.value.message
    assert info.value.span is None


def test_measured_spec_may_cite_a_non_url() -> None:
    data = _spec_data()
    data.update(name="Local", measured=True)
    data["sources"] = [{"url": "solar calibrate on host x", "edition": "today", "fields": ["*"]}]
    assert validate_hardware_spec(data, origin="test").measured
