"""The per-rank panel of `solar plot` for a report with a ``distributed`` section."""

from __future__ import annotations

from typing import Any

from solar.report.distributed import DistributedInfo

__all__ = ["draw_ranks"]

_COLORS = {"compute": "#4477AA", "hbm": "#228833", "injection": "#CCBB44",
           "scale-out": "#EE6677"}


def draw_ranks(ax: Any, d: DistributedInfo) -> None:
    """Per pipeline stage, each resource's busy time stacked (their no-overlap sum), and
    the step bound (the max over resources and ranks) as a line."""
    stages = [r.stage for r in d.ranks]
    resources = ["compute", "hbm", *sorted({k for r in d.ranks for k in r.links_s})]
    top = max((r.compute_s + r.hbm_s + sum(r.links_s.values()) for r in d.ranks), default=0.0)
    scale, unit = next(((s, u) for s, u in ((1.0, "s"), (1e3, "ms"), (1e6, "µs"))
                        if top * s >= 1.0), (1e9, "ns"))
    bottom = [0.0] * len(stages)
    for res in resources:
        values = [scale * (r.compute_s if res == "compute" else r.hbm_s if res == "hbm"
                           else r.links_s.get(res, 0.0)) for r in d.ranks]
        ax.bar([str(s) for s in stages], values, bottom=bottom, label=res,
               color=_COLORS.get(res, "#999999"))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    if d.step.time_s is not None:
        ax.axhline(d.step.time_s * scale, color="black", linestyle="--",
                   label=f"bound (binds: {d.step.binding})")
    ax.set_xlabel("pipeline stage")
    ax.set_ylabel(f"busy time per step ({unit})")
    title = f"{d.plan.label} on {d.cluster}"
    ax.set_title(title if d.step.time_s is not None else f"{title}: DOES NOT FIT",
                 fontsize=10)
    ax.legend(fontsize=8, title="stacked: no-overlap sum", title_fontsize=8)
