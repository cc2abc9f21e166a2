"""The cluster-spec schema: one frozen, validated `ClusterSpec` per multi-GPU system.

Contract: a `ClusterSpec` is plain data about a system of identical devices: which
device spec each GPU is (`solar.hw.HardwareSpec` by name), how many share a node,
the scale-up fabric (NVLink/NVSwitch, Infinity Fabric, ICI), the scale-out network
(NICs per GPU) and the host links. Construction validates the schema (unknown keys
are rejected) and the sanity rules of `cluster_problems`:

* every bandwidth is **per direction** and per GPU (per NIC for the scale-out), as
  the datasheet prints it, halved where the datasheet prints a bidirectional figure
  (the YAML's notes say so); never a measured figure;
* every figure is positive, finite and in a plausible range for its unit (a GB/s
  value written where bytes/s belongs is rejected);
* a scale-up domain and a node nest (one is a multiple of the other);
* every figure is cited by a `Source` (the same model as device specs).

The distributed bounds divide by these bandwidths, so they must be *upper* figures
(datasheet peaks): a bound computed with them is then never too high. Latencies are
used only by the labelled alpha-beta *estimate*, never by a bound.

Loading from YAML (and the E04xx diagnostics) lives in `solar.hw.loader`.
"""

from __future__ import annotations

import math
from typing import Literal, Self, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from solar.hw.spec import SANITY_ERROR_TYPE, Source

__all__ = [
    "CLUSTER_FIGURES",
    "ClusterSpec",
    "HostLinks",
    "ScaleOut",
    "ScaleUp",
    "cluster_problems",
]

Topology: TypeAlias = Literal[
    "rail-optimized-fat-tree", "fat-tree", "3d-torus", "full-mesh", "switched", "none"
]
"""How links are wired; informational for the bound (which only uses per-GPU
injection and node cuts, Note [Cuts] in docs/distributed.md)."""

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class ScaleUp(BaseModel):
    """The fabric inside one scale-up domain (NVLink + NVSwitch, Infinity Fabric, ICI).

    Attributes:
        fabric: the fabric, in words (``NVLink 4 + NVSwitch 3``).
        nvlink_generation: the NVLink generation, where the fabric is NVLink.
        bandwidth_per_direction_bytes_per_s: per GPU, all its scale-up links
            together, one direction.
        domain_size: GPUs that reach each other over this fabric alone.
        in_network_reduction: the fabric reduces in the switch (NVLink SHARP /
            NVLS on NVSwitch 3 and later): an all-reduce then needs each GPU to
            send and receive its buffer once instead of 2(n-1)/n times.
        topology: how the domain is wired.
        latency_s: per-hop latency for the alpha-beta *estimate* only.
    """

    model_config = _FROZEN
    fabric: str = Field(min_length=1)
    nvlink_generation: int | None = Field(default=None, ge=1, le=10)
    bandwidth_per_direction_bytes_per_s: float
    domain_size: int = Field(ge=1)
    in_network_reduction: bool = False
    topology: Topology = "switched"
    latency_s: float | None = Field(default=None, ge=0)


class ScaleOut(BaseModel):
    """The network between scale-up domains (InfiniBand, RoCE, DCN).

    Attributes:
        network: the network, in words (``InfiniBand NDR 400 Gb/s``).
        nics_per_gpu: NICs (or NIC ports) per GPU.
        bandwidth_per_direction_bytes_per_s: per NIC, one direction.
        topology: how the network is wired.
        oversubscription: the fabric's oversubscription ratio (1.0 non-blocking);
            recorded, not used by the bound (a bound that ignores it stays lower).
        in_network_reduction: the switches reduce (InfiniBand SHARP).
        latency_s: per-hop latency for the alpha-beta *estimate* only.
    """

    model_config = _FROZEN
    network: str = Field(min_length=1)
    nics_per_gpu: float = Field(gt=0)
    bandwidth_per_direction_bytes_per_s: float
    topology: Topology = "rail-optimized-fat-tree"
    oversubscription: float = Field(default=1.0, ge=1.0)
    in_network_reduction: bool = False
    latency_s: float | None = Field(default=None, ge=0)


class HostLinks(BaseModel):
    """The host links of one GPU.

    Attributes:
        link: the link, in words (``PCIe Gen5 x16``).
        bandwidth_per_direction_bytes_per_s: one direction, per GPU.
    """

    model_config = _FROZEN
    link: str = Field(min_length=1)
    bandwidth_per_direction_bytes_per_s: float


class ClusterSpec(BaseModel):
    """A multi-GPU system: its device, nodes, fabrics and provenance.

    Attributes:
        name: canonical id, e.g. ``DGX_H100``; bundled specs live in
            ``hardware_specs/clusters/<name lowercased>.yaml``.
        display_name: human-readable system name.
        vendor: e.g. ``NVIDIA``.
        device: the `solar.hw.HardwareSpec` of each GPU, by name (or a path).
        gpus_per_node: GPUs per node (host).
        max_gpus: the most GPUs the system has; ``None`` for a building block that
            scales out without a fixed limit (a DGX SuperPOD of any size).
        scale_up: the fabric inside a scale-up domain.
        scale_out: the network between domains; ``None`` when there is none.
        host: the GPU's host links; ``None`` where none is published.
        notes: derivations and caveats.
        sources: citations; at least one.
    """

    model_config = _FROZEN
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    display_name: str = Field(min_length=1)
    vendor: str = Field(min_length=1)
    device: str = Field(min_length=1)
    gpus_per_node: int = Field(ge=1)
    max_gpus: int | None = Field(default=None, ge=1)
    scale_up: ScaleUp
    scale_out: ScaleOut | None = None
    host: HostLinks | None = None
    notes: tuple[str, ...] = ()
    sources: tuple[Source, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _check_sanity(self) -> Self:
        problems = cluster_problems(self)
        if problems:
            summary = "; ".join(f"{loc}: {msg}" for loc, msg in problems)
            raise PydanticCustomError(
                SANITY_ERROR_TYPE, "{summary}", {"summary": summary, "problems": tuple(problems)}
            )
        return self

    @property
    def nic_bandwidth_per_gpu_bytes_per_s(self) -> float:
        """All of one GPU's NICs together, one direction (0 without a scale-out network)."""
        if self.scale_out is None:
            return 0.0
        return self.scale_out.nics_per_gpu * self.scale_out.bandwidth_per_direction_bytes_per_s


CLUSTER_FIGURES: tuple[str, ...] = (
    "gpus_per_node",
    "max_gpus",
    "scale_up.bandwidth_per_direction_bytes_per_s",
    "scale_up.domain_size",
    "scale_up.in_network_reduction",
    "scale_out.nics_per_gpu",
    "scale_out.bandwidth_per_direction_bytes_per_s",
    "scale_out.in_network_reduction",
    "host.bandwidth_per_direction_bytes_per_s",
)
"""Figures a source must cite (dotted paths as spelled in cluster files)."""

_BANDWIDTH_RANGE = (1e8, 1e14)


def _value(spec: ClusterSpec, path: str) -> object:
    obj: object = spec
    for part in path.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part)
    return obj


def cluster_problems(spec: ClusterSpec) -> list[tuple[str, str]]:
    """List the sanity rules ``spec`` breaks (see the module docstring).

    Args:
        spec: a spec whose fields passed schema validation.

    Returns:
        ``(field path, message)`` pairs; empty when the spec is sane.
    """
    problems: list[tuple[str, str]] = []
    lo, hi = _BANDWIDTH_RANGE
    for path in CLUSTER_FIGURES:
        value = _value(spec, path)
        if (path.endswith("bytes_per_s") and isinstance(value, float)
                and (not math.isfinite(value) or not lo <= value <= hi)):
            problems.append((path, f"{value:.4g} is outside [{lo:.0e}, {hi:.0e}] bytes/s; "
                                   "check the unit"))
    domain, node = spec.scale_up.domain_size, spec.gpus_per_node
    if domain % node and node % domain:
        problems.append(("scale_up.domain_size",
                         f"{domain} and gpus_per_node {node} do not nest (neither divides)"))
    if spec.max_gpus is not None and spec.max_gpus % node:
        problems.append(("max_gpus", f"{spec.max_gpus} is not a whole number of nodes"))
    problems.extend(_source_problems(spec))
    return problems


def _source_problems(spec: ClusterSpec) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    cited: set[str] = set()
    for i, source in enumerate(spec.sources):
        if not source.url.startswith(("https://", "http://")):
            problems.append((f"sources.{i}.url", "a cluster spec must cite an http(s) URL"))
        for entry in source.fields:
            if entry != "*" and entry not in CLUSTER_FIGURES:
                problems.append((f"sources.{i}.fields", f"`{entry}` names no figure"))
            cited.add(entry)
    if "*" in cited:
        return problems
    for path in CLUSTER_FIGURES:
        if _value(spec, path) is not None and path not in cited:
            problems.append((path, "no source cites this figure"))
    return problems
