"""``solar specs`` and ``solar calibrate``: the hardware spec library."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from solar.cli.app import QUIET_HELP, app, echo_err, examples, specs_app

__all__ = ["calibrate", "specs_clusters", "specs_list", "specs_show"]


def _fmt_flops(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e12:,.1f}"


@specs_app.command("list", epilog=examples("solar specs list"))
def specs_list() -> None:
    """List the bundled hardware specs (dense peaks, TFLOP/s)."""
    from solar.cli.tables import print_table
    from solar.hw import Precision, list_hardware_specs

    print_table(
        ("name", "fp32 vec>", "tf32>", "bf16>", "fp8>", "DRAM TB/s>", "device"),
        [
            (
                s.name,
                _fmt_flops(s.peak_for(Precision.FP32, "vector")),
                _fmt_flops(s.peak_for(Precision.TF32)),
                _fmt_flops(s.peak_for(Precision.BF16)),
                _fmt_flops(s.peak_for(Precision.FP8)),
                f"{s.dram_bandwidth_bytes_per_s / 1e12:.3f}",
                s.display_name,
            )
            for s in list_hardware_specs()
        ],
    )


@specs_app.command(
    "show", epilog=examples("solar specs show H100_SXM", "solar specs show my_box.yaml")
)
def specs_show(
    name: Annotated[str, typer.Argument(help="Spec name (e.g. H100_SXM) or a YAML path.")],
) -> None:
    """Print one spec as YAML, with its sources."""
    from solar.hw import dump_hardware_spec, load_hardware_spec

    typer.echo(dump_hardware_spec(load_hardware_spec(name)), nl=False)


@specs_app.command(
    "clusters",
    epilog=examples("solar specs clusters", "solar specs clusters my_cluster.yaml"),
)
def specs_clusters(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Cluster YAML files to validate (default: the bundled ones)."),
    ] = None,
) -> None:
    """List and validate cluster specs (per-direction GB/s per GPU; docs/distributed.md)."""
    from solar.cli.tables import print_table
    from solar.hw.cluster_loader import list_cluster_specs, load_cluster_spec

    specs = [load_cluster_spec(f) for f in files] if files else list(list_cluster_specs())
    print_table(
        ("name", "device", "GPUs/node>", "max GPUs>", "scale-up GB/s>", "domain>", "NVLS/SHARP",
         "NIC GB/s/GPU>", "fabric"),
        [
            (
                c.name, c.device, str(c.gpus_per_node),
                "-" if c.max_gpus is None else str(c.max_gpus),
                f"{c.scale_up.bandwidth_per_direction_bytes_per_s / 1e9:,.0f}",
                str(c.scale_up.domain_size),
                "yes" if c.scale_up.in_network_reduction else "no",
                f"{c.nic_bandwidth_per_gpu_bytes_per_s / 1e9:,.2f}",
                c.scale_up.fabric,
            )
            for c in specs
        ],
    )


@app.command(
    "calibrate",
    epilog=examples(
        "solar calibrate -o my_box.yaml",
        "solar analyze model.py --measure --arch my_box.yaml  # headroom on this machine",
    ),
)
def calibrate(
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the spec YAML.")],
    name: Annotated[str | None, typer.Option(help="Spec name (default local_<host>).")] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Small arrays, few trials: ~1 s, rough figures.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
) -> None:
    """Measure this machine's bandwidth and matmul throughput; write a measured spec.

    Takes 4-10 s on an idle machine (about 30 s on a loaded one); each stage is shown
    as it starts. A figure below what a spec may hold is left out with a note, never
    written as a floor; a bandwidth below 1 GB/s is refused (E0404, exit 2).
    """
    from solar.cli.progress import stage_progress
    from solar.files import prepare_output, write_atomic
    from solar.hw import calibrate_machine, dump_hardware_spec

    prepare_output(output)  # a bad -o fails before the measurement, not after
    with stage_progress(quiet=quiet) as progress:
        progress("measuring this machine (4-10 s idle, ~30 s loaded)")
        spec = calibrate_machine(name=name, quick=quick, progress=progress)
    write_atomic(output, dump_hardware_spec(spec))
    echo_err(
        f"wrote {output}: {spec.dram_bandwidth_bytes_per_s / 1e9:.1f} GB/s, "
        + ", ".join(f"{p.value} {v / 1e9:.1f} GFLOP/s" for p, v in spec.vector_flops_per_s.items())
    )
