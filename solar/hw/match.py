"""Which hardware spec describes the device a program was measured on.

Contract: ``(measured device name, HardwareSpec) -> bool``, pure. Headroom
(measured time / bound) means something only when the bound and the measurement
are of the same device: a laptop CPU's time over an H100 bound is a ratio of two
unrelated machines. A spec matches a measurement when

* the spec was calibrated (``measured: true``, `solar calibrate`) on this host and
  the measurement ran on its CPU, or
* the measured accelerator's name (``torch.cuda.get_device_name``, JAX's
  ``device_kind``) carries every model token of the spec's name (``H100``, ``RTX``
  ``4090``, ``TPU`` ``V5P``) and its form factor: a spec named ``PCIe`` needs
  ``PCIe`` in the device name, an ``SXM`` spec must not have it (CUDA names an
  H100 SXM "NVIDIA H100 80GB HBM3").
"""

from __future__ import annotations

import re
import socket

from solar.hw.spec import HardwareSpec

__all__ = ["device_matches_spec", "mismatch_reason"]

_FORM_FACTORS = frozenset({"SXM", "SXM4", "SXM5", "PCIE"})
_IGNORED = frozenset({"80GB", "40GB", "48GB", "64GB", "141GB", "NVIDIA", "AMD", "GOOGLE"})


def _tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^A-Za-z0-9]+", text.upper()) if t}


def device_matches_spec(device: str, spec: HardwareSpec, *, host: str | None = None) -> bool:
    """Whether a measurement on ``device`` is a measurement of ``spec``'s device.

    >>> from solar.hw import load_hardware_spec
    >>> device_matches_spec("NVIDIA H100 80GB HBM3", load_hardware_spec("H100_SXM"))
    True
    >>> device_matches_spec("NVIDIA H100 80GB HBM3", load_hardware_spec("H100_PCIe"))
    False
    >>> device_matches_spec("cpu", load_hardware_spec("H100_SXM"))
    False
    """
    dev = _tokens(device)
    if spec.measured:
        host = host if host is not None else socket.gethostname()
        return dev == {"CPU"} and bool(host) and host in spec.display_name
    if dev == {"CPU"}:
        return False
    name = _tokens(spec.name.replace("_", " "))
    model = name - _FORM_FACTORS - _IGNORED
    if not model or not model <= dev:
        return False
    if "PCIE" in name:
        return "PCIE" in dev
    return not ({"SXM", "SXM4", "SXM5"} & name) or "PCIE" not in dev


def mismatch_reason(device: str, spec: HardwareSpec) -> str:
    """Why a measurement on ``device`` gives no headroom against ``spec`` (for reports)."""
    if _tokens(device) == {"CPU"}:
        return (
            f"measured on this machine's CPU, not on {spec.display_name}: headroom against "
            f"{spec.name} would compare two different devices (to get headroom here, run "
            "`solar calibrate -o local.yaml` and pass --arch local.yaml, or measure on "
            f"the {spec.name})"
        )
    return (
        f"measured on {device}, which is not {spec.display_name}: no headroom against "
        f"{spec.name} (add --arch for the measured device)"
    )
