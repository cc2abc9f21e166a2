"""The per-rank panel of `solar plot` for a report with a ``distributed`` section."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from solar.report.distributed import DistributedInfo

__all__ = ["draw_ranks", "extra_panels"]

_OPS = {"F": "#4477AA", "B": "#EE6677", "W": "#228833"}

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


def extra_panels(d: DistributedInfo) -> list[Callable[[Any], None]]:
    """The panels of the report's pipeline, failure and MoE sections, as drawers."""
    out: list[Callable[[Any], None]] = []
    sc = d.schedule
    drawn = next((r for r in sc.schedules if r.schedule == sc.drawn), None) if sc else None
    if drawn is not None and drawn.gantt:
        out.append(lambda ax: _draw_gantt(ax, d))
    if d.failures is not None:
        out.append(lambda ax: _draw_failures(ax, d))
    if d.moe is not None and d.moe.loads:
        out.append(lambda ax: _draw_moe(ax, d))
    return out


def _draw_gantt(ax: Any, d: DistributedInfo) -> None:
    """The drawn schedule's operations per rank (F, B, W), the schedule-free bound."""
    from matplotlib.patches import Patch  # matplotlib is imported lazily (solar.report.plot)

    assert d.schedule is not None
    row = next(r for r in d.schedule.schedules if r.schedule == d.schedule.drawn)
    top = row.time_s or 1.0
    scale, unit = next(((s, u) for s, u in ((1.0, "s"), (1e3, "ms"), (1e6, "µs"))
                        if top * s >= 1.0), (1e9, "ns"))
    for rank, ops in enumerate(row.gantt):
        for name, start, end in ops:
            ax.barh(rank, (end - start) * scale, left=start * scale, height=0.8,
                    color=_OPS.get(name[0], "#999999"), edgecolor="white", linewidth=0.3)
    ax.axvline(d.schedule.bound_s * scale, color="black", linestyle="--",
               label="any schedule >=")
    handles, _ = ax.get_legend_handles_labels()
    # an empty barh has no patch to take the colour from: one patch per kind
    handles.extend(Patch(color=color, label=kind) for kind, color in _OPS.items())
    ax.set_yticks(range(len(row.gantt)))
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("pipeline rank")
    ax.set_title(f"{row.schedule}: step >= {row.time_s * scale:.3g} {unit}", fontsize=10)
    ax.legend(handles=handles, fontsize=8, loc="lower right")


def _draw_failures(ax: Any, d: DistributedInfo) -> None:
    """Step bound against replicas down at the binding stage."""
    fl = d.failures
    assert fl is not None
    ks = [k for k, _ in fl.curve]
    ax.plot(ks, [t for _, t in fl.curve], marker="o", label="re-routed to survivors")
    ax.axhline(fl.drop_pipelines_s, color="#EE6677", linestyle=":",
               label="drop the failed pipelines (this failure set)")
    ax.set_xticks(ks)
    ax.set_xlabel(f"replicas down at stage {max(fl.binding_stage, 0)}")
    ax.set_ylabel("step bound (s)")
    ax.set_title("step bound with failures (one-way schedules)", fontsize=10)
    ax.legend(fontsize=8)


def _draw_moe(ax: Any, d: DistributedInfo) -> None:
    """Tokens per expert (rows) and step (columns), the first MoE layer."""
    mo = d.moe
    assert mo is not None
    grid = [[step[0][e] for step in mo.loads] for e in range(mo.experts)]
    im = ax.imshow(grid, aspect="auto", cmap="viridis")
    ax.figure.colorbar(im, ax=ax, label="tokens")
    ax.set_xlabel("step")
    ax.set_ylabel("expert")
    ax.set_title(f"expert load, layer 0 ({mo.source})", fontsize=10)
