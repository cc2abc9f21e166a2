"""The terminal summary of a report's ``distributed`` section (docs/distributed.md)."""

from __future__ import annotations

from solar.report.distributed import DistributedInfo
from solar.report.units import format_bytes, format_flops, format_time

__all__ = ["distributed_lines"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def distributed_lines(d: DistributedInfo) -> list[str]:
    """What binds the plan's step, per rank, per collective, and its memory."""
    p, s, st, mem = d.plan, d.step, d.structure, d.memory
    lines = [
        f"distributed: {p.label} on {d.cluster} ({p.world} x {d.device}), {p.phase}, "
        f"micro-batch {p.micro_batch} x {p.micro_batches} per rank, global batch "
        f"{p.global_batch}, recompute {p.recompute}",
        f"  model: {st.layers} layer(s){f' ({st.stack})' if st.stack else ''}, hidden "
        f"{st.hidden or '?'}, heads {st.heads or '?'}, {st.tokens_per_micro_batch} tokens per "
        f"micro-batch, {st.tp_all_reduces_per_layer} TP reduction(s) per layer",
    ]
    if s.time_s is None:
        lines.append(f"  step: INFEASIBLE, no bound: needs >= {format_bytes(mem.total_bytes)} "
                     f"per GPU of {format_bytes(mem.capacity_bytes)}")
    else:
        # a pipeline binding names its own stage ("pipeline work (..., stage 3)")
        where = "" if "stage" in s.binding else f", stage {s.binding_rank}"
        lines.append(
            f"  step >= {format_time(s.time_s)} (bound; binds: {s.binding}{where}); MFU <= "
            f"{_pct(s.mfu_ceiling)} of "
            f"{format_flops(s.mfu_peak_flops_per_s)}/s; tokens/s <= "
            + (f"{s.tokens_per_s_ceiling:,.0f}" if s.tokens_per_s_ceiling else "-")
        )
    lines.append(f"  estimate (not a bound) with per-hop latency: "
                 f"{format_time(s.alpha_estimate_s)}; no-overlap sum (reference): "
                 f"{format_time(s.no_overlap_s)}")
    if s.time_s is not None and s.alpha_estimate_s < s.time_s:
        lines.append("    (both of the busiest rank's resources alone: the step bound also "
                     "holds the pipeline's order)")
    lines.append("  stage  compute      HBM          " + "  ".join(
        f"{k:<11}" for k in sorted({k for r in d.ranks for k in r.links_s})) + "  binds")
    for r in d.ranks:
        links = "  ".join(f"{format_time(r.links_s.get(k, 0.0)):<11}"
                          for k in sorted({k for x in d.ranks for k in x.links_s}))
        lines.append(f"  {r.stage:>5}  {format_time(r.compute_s):<11}  "
                     f"{format_time(r.hbm_s):<11}  {links}  {r.binding}")
    for c in d.collectives:
        mark = "" if c.in_bound else "  (not charged)"
        lines.append(
            f"  {c.op:<14} {c.axis}x{c.group_size:<4} {c.phase:<9} "
            f"{format_bytes(c.bytes_per_rank):>9} x{c.count_per_step:g} on {c.link}: "
            f"{format_time(c.time_s)}{mark}"
        )
    lines.append(
        f"  memory per GPU >= {format_bytes(mem.total_bytes)} of "
        f"{format_bytes(mem.capacity_bytes)} (parameters {format_bytes(mem.parameter_bytes)}, "
        f"gradients {format_bytes(mem.gradient_bytes)}, optimizer "
        f"{format_bytes(mem.optimizer_state_bytes)}, activations "
        f"{format_bytes(mem.activation_bytes)}){'' if mem.feasible else ': DOES NOT FIT'}"
    )
    lines.extend(_schedule_lines(d))
    lines.extend(_moe_lines(d))
    lines.extend(f"  assumes: {a}" for a in d.assumptions)
    return lines


GANTT_WIDTH = 64


def _gantt(ops: tuple[tuple[str, float, float], ...], end: float) -> str:
    """One rank's timeline in GANTT_WIDTH cells: the op kind (F, B, W) running at each
    cell's middle, ``.`` when idle."""
    cells = []
    for i in range(GANTT_WIDTH):
        t = (i + 0.5) * end / GANTT_WIDTH
        cells.append(next((op[0][0] for op in ops if op[1] <= t < op[2]), "."))
    return "".join(cells)


def _schedule_lines(d: DistributedInfo) -> list[str]:
    sc = d.schedule
    if sc is None:
        return []
    lines = [
        f"  pipeline: any schedule >= {format_time(sc.bound_s)}; one-way schedules >= "
        f"{format_time(sc.one_way_s)} (binds: {sc.binding}, stage {sc.binding_stage}; "
        f"work {format_time(sc.work_s)}, fill {format_time(sc.fill_s)}, drain "
        f"{format_time(sc.drain_s)}); periodic (no optimizer sync) >= "
        f"{format_time(sc.periodic_s)}; boundary send {format_time(sc.send_s)}",
    ]
    lines.extend(
        f"  schedule {r.schedule:<11} >= {format_time(r.time_s):<11} bubble max "
        f"{format_time(max(r.bubble_s, default=0.0)):<11} in flight max "
        f"{max(r.in_flight, default=0.0):g}" for r in sc.schedules)
    drawn = next((r for r in sc.schedules if r.schedule == sc.drawn), None)
    lines.append("  stage  F            B            W            O            bubble")
    for st in d.stages:
        lines.append(f"  {st.stage:>5}  {format_time(st.forward_s):<11}  "
                     f"{format_time(st.input_grad_s):<11}  {format_time(st.weight_grad_s):<11}  "
                     f"{format_time(st.optimizer_s):<11}  {format_time(st.bubble_s)}")
    fl = d.failures
    if fl is not None:
        lines.append(f"  failures (one-way schedule-free bound): step >= "
                     f"{format_time(fl.time_s)} (no failure {format_time(fl.no_failure_s)}; "
                     f"dropping the pipelines "
                     f"{format_time(fl.drop_pipelines_s)})")
        lines.extend(
            f"    stage {r.stage}: {r.down} down, +{r.extra_micro_batches} micro-batch(es) "
            f"= {format_time(r.extra_work_s)} per survivor "
            f"({'fits in' if r.fits_in_bubble else 'exceeds'} the bubble), "
            f"{format_bytes(r.extra_boundary_bytes)} re-routed, ~"
            f"{format_bytes(r.extra_activation_bytes)} more activations" for r in fl.stages)
    if drawn is not None and drawn.gantt:
        lines.append(f"  {drawn.schedule} timeline (F forward, B input grad, W weight grad, "
                     f". idle; 0 .. {format_time(drawn.time_s)}):")
        lines.extend(f"  {r:>5} |{_gantt(ops, drawn.time_s)}|"
                     for r, ops in enumerate(drawn.gantt))
    return lines


def _moe_lines(d: DistributedInfo) -> list[str]:
    mo = d.moe
    if mo is None:
        return []

    def worst(xs: tuple[float, ...]) -> str:
        return format_time(max(xs, default=0.0))

    peak = max((x for row in mo.imbalance for x in row), default=1.0)
    return [
        f"  moe: {mo.source}, {mo.experts} experts x {mo.layers} layer(s) x {mo.steps} "
        f"step(s) on ep={mo.group} ({mo.slots_per_gpu} slot(s) per GPU); expert phase per "
        f"step (worst step) >= static {worst(mo.static_s)}, lagged adaptive "
        f"{worst(mo.lagged_s)} (moves {worst(mo.move_s)}), oracle {worst(mo.oracle_s)}, "
        f"balanced {worst(mo.balanced_s)}; imbalance up to {peak:.2f}x",
        f"    all-to-all per step: {format_bytes(max(mo.a2a_bytes_per_rank, default=0.0))} "
        f"into the busiest GPU, {format_bytes(max(mo.node_cut_bytes, default=0.0))} across "
        f"the busiest domain's boundary, >= {worst(mo.a2a_s)}",
    ]
