"""Find, read and validate cluster-spec YAML files (``hardware_specs/clusters/``).

Contract: `load_cluster_spec(name_or_path) -> ClusterSpec` accepts a bundled cluster's
canonical name (case-insensitive; ``-``, ``_`` and spaces interchangeable) or the path
of a user YAML file, exactly as `solar.hw.load_hardware_spec` does for devices; the
device the cluster names is loaded too, so a cluster that loads can be bounded.

Every failure is a `solar.diagnostics.HardwareSpecError` (exit 2):

* ``E0405`` unknown cluster name or unreadable file (the message suggests close names);
* ``E0402`` YAML syntax error or duplicate key; ``E0403`` schema error; ``E0404``
  sanity error (`solar.hw.cluster.cluster_problems`), as for device specs;
* ``E0406`` the device spec the cluster names is unknown or invalid.
"""

from __future__ import annotations

import difflib
import functools
import os
from pathlib import Path

from pydantic import ValidationError

from solar.diagnostics import HardwareSpecError, UsageError
from solar.files import read_text
from solar.hw.cluster import ClusterSpec
from solar.hw.loader import (
    _MAX_SPEC_BYTES,
    _looks_like_path,
    _normalize,
    _validation_error,
    _yaml_mapping,
    hardware_spec_dir,
    load_hardware_spec,
)
from solar.hw.spec import HardwareSpec

__all__ = ["cluster_device", "list_cluster_specs", "load_cluster_spec", "parse_cluster_spec"]

CLUSTER_DIR_NAME = "clusters"


def _cluster_dir() -> Path:
    return hardware_spec_dir() / CLUSTER_DIR_NAME


@functools.lru_cache(maxsize=1)
def _bundled() -> dict[str, Path]:
    directory = _cluster_dir()
    if not directory.is_dir():
        return {}
    return {path.stem: path for path in sorted(directory.glob("*.yaml"))}


def load_cluster_spec(name_or_path: str | os.PathLike[str]) -> ClusterSpec:
    """Load a bundled cluster by name, or a user cluster from a YAML file.

    Args:
        name_or_path: e.g. ``"DGX_H100"``, ``"dgx-h100"`` or ``"my_cluster.yaml"``.

    Returns:
        The validated cluster (its device spec loads too).

    Raises:
        HardwareSpecError: E0405 unknown name or unreadable file; E0402 YAML syntax;
            E0403 schema; E0404 sanity; E0406 its device spec is unknown.
    """
    if isinstance(name_or_path, os.PathLike) or _looks_like_path(name_or_path):
        path = Path(name_or_path)
        try:
            text = read_text(path, max_bytes=_MAX_SPEC_BYTES)
        except UsageError as err:  # missing, not a regular file, too large, not UTF-8
            raise HardwareSpecError(
                f"cannot read cluster spec file `{path}`: {err.message}", code="E0405"
            ) from None
        spec = parse_cluster_spec(text, filename=str(path))
    else:
        key = _normalize(name_or_path)
        if key not in _bundled():
            raise _unknown(name_or_path.strip(), key)
        spec = _load_bundled(key)
    cluster_device(spec)
    return spec


@functools.cache
def _load_bundled(key: str) -> ClusterSpec:
    path = _bundled()[key]
    spec = parse_cluster_spec(path.read_text(encoding="utf-8"), filename=str(path))
    if spec.name.lower() != path.stem:
        raise HardwareSpecError(
            f"bundled cluster {path} holds `{spec.name}`; its file must be named "
            f"`{spec.name.lower()}.yaml`",
            code="E0404",
        )
    return spec


def list_cluster_specs() -> tuple[ClusterSpec, ...]:
    """Every bundled cluster, sorted by name, each checked against its device spec.

    Raises:
        HardwareSpecError: a bundled file is invalid (a packaging bug).
    """
    specs = tuple(sorted((_load_bundled(k) for k in _bundled()), key=lambda s: s.name))
    for spec in specs:
        cluster_device(spec)
    return specs


def cluster_device(spec: ClusterSpec) -> HardwareSpec:
    """The device spec a cluster names.

    Raises:
        HardwareSpecError: E0406 when it does not load.
    """
    try:
        return load_hardware_spec(spec.device)
    except HardwareSpecError as err:
        raise HardwareSpecError(
            f"cluster `{spec.name}` names device `{spec.device}`, which does not load: "
            f"{err.message}",
            code="E0406",
            notes=err.notes,
        ) from None


def parse_cluster_spec(text: str, *, filename: str = "<string>") -> ClusterSpec:
    """Parse and validate a cluster spec from YAML text.

    Raises:
        HardwareSpecError: E0402 YAML syntax; E0403 schema; E0404 sanity.
    """
    data, source, root = _yaml_mapping(text, filename=filename, what="cluster spec")
    try:
        return ClusterSpec.model_validate(data)
    except ValidationError as err:
        raise _validation_error(err, f"(cluster) {filename}", source, root) from err


def _unknown(name: str, key: str) -> HardwareSpecError:
    names = {_normalize(s.name): s.name for s in list_cluster_specs()}
    close = difflib.get_close_matches(key, list(names), n=3, cutoff=0.5)
    partial = [k for k in sorted(names) if key and key in k]
    shown = list(dict.fromkeys(partial + close))[:3]
    message = f"unknown cluster `{name}`"
    if shown:
        message += "; did you mean " + " or ".join(f"`{names[c]}`" for c in shown) + "?"
    return HardwareSpecError(
        message,
        code="E0405",
        notes=(f"available: {', '.join(sorted(names.values())) or 'none'}",
               "or pass the path of a cluster YAML file"),
    )
