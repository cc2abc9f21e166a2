"""The bundled cluster specs: per-direction datasheet figures, citations, coded errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.diagnostics import HardwareSpecError
from solar.hw.cluster import ClusterSpec
from solar.hw.cluster_loader import list_cluster_specs, load_cluster_spec, parse_cluster_spec

CLUSTERS = list_cluster_specs()

# name -> (device, GPUs per node, scale-up GB/s per direction, domain, in-network
#          reduction, NIC GB/s per GPU per direction): datasheet figures, bidirectional
#          NVLink halved, Gb/s ports divided by 8
FIGURES = {
    "DGX_A100": ("A100_SXM_80GB", 8, 300, 8, False, 25),      # 600 GB/s bidi; HDR 200 Gb/s
    "DGX_H100": ("H100_SXM", 8, 450, 8, True, 50),            # 900 GB/s bidi; NDR 400 Gb/s
    "GB200_NVL72": ("GB200", 4, 900, 72, True, 50),           # 1.8 TB/s bidi
    "TPU_V5P_SLICE": ("TPU_v5p", 4, 600, 6144, False, 6.25),  # ICI 1,200 GB/s bidi; DCN 50 Gb/s
    "MI300X_NODE": ("MI300X", 8, 448, 8, False, 50),          # 7 x 64 GB/s
}


def test_the_required_clusters_are_bundled() -> None:
    assert {c.name for c in CLUSTERS} == set(FIGURES)


@pytest.mark.parametrize("cluster", CLUSTERS, ids=[c.name for c in CLUSTERS])
def test_figures(cluster: ClusterSpec) -> None:
    device, per_node, up, domain, innet, nic = FIGURES[cluster.name]
    assert cluster.device == device
    assert cluster.gpus_per_node == per_node
    assert cluster.scale_up.bandwidth_per_direction_bytes_per_s == up * 1e9
    assert cluster.scale_up.domain_size == domain
    assert cluster.scale_up.in_network_reduction is innet
    assert cluster.nic_bandwidth_per_gpu_bytes_per_s == pytest.approx(nic * 1e9)
    assert all(s.url.startswith("https://") for s in cluster.sources)


def test_names_are_forgiving_and_files_work(tmp_path: Path) -> None:
    dgx = load_cluster_spec("dgx-h100")
    assert dgx.name == "DGX_H100"
    text = (Path(__file__).resolve().parents[2] / "hardware_specs" / "clusters" /
            "dgx_h100.yaml").read_text()
    mine = tmp_path / "mine.yaml"
    mine.write_text(text.replace("name: DGX_H100", "name: My_H100"))
    assert load_cluster_spec(mine).scale_up == dgx.scale_up


BAD = [
    ("name: X\n", "E0403"),                                       # missing keys
    ("name: [\n", "E0402"),                                       # YAML syntax
    ("- 1\n", "E0403"),                                           # not a mapping
    ("a: " + "[" * 5000 + "\n", "E0402"),                         # nested too deeply
    ("gpus_per_node: " + "9" * 5000 + "\n", "E0402"),             # over int's digit limit
]


@pytest.mark.parametrize(("text", "code"), BAD)
def test_bad_yaml_is_coded(text: str, code: str) -> None:
    with pytest.raises(HardwareSpecError) as err:
        parse_cluster_spec(text, filename="bad.yaml")
    assert err.value.code == code


def _dgx_text() -> str:
    return (Path(__file__).resolve().parents[2] / "hardware_specs" / "clusters" /
            "dgx_h100.yaml").read_text()


@pytest.mark.parametrize(("old", "new", "code"), [
    ("450.0e9", "450.0", "E0404"),                  # GB/s written where bytes/s belongs
    ("domain_size: 8", "domain_size: 6", "E0404"),  # domain and node do not nest
    ("gpus_per_node: 8", "gpus_per_node: 8\nbogus: 1", "E0403"),  # unknown key
    ("device: H100_SXM", "device: H900", "E0406"),  # the device does not load
])
def test_sanity_errors(tmp_path: Path, old: str, new: str, code: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(_dgx_text().replace(old, new, 1))
    with pytest.raises(HardwareSpecError) as err:
        load_cluster_spec(f)
    assert err.value.code == code


def test_uncited_figure_is_rejected(tmp_path: Path) -> None:
    text = _dgx_text().replace(", scale_out.in_network_reduction]", "]")
    with pytest.raises(HardwareSpecError) as err:
        parse_cluster_spec(text, filename="c.yaml")
    assert err.value.code == "E0404"
    assert "no source cites" in err.value.message


def test_unknown_cluster_suggests() -> None:
    with pytest.raises(HardwareSpecError) as err:
        load_cluster_spec("dgx_h10")
    assert err.value.code == "E0405"
    assert "DGX_H100" in err.value.message
