"""The comparison's and the capacity search's text: the side-by-side table
(as text and as Markdown) with its notes, and the capacity stages' table
with the capacity found. The model's report(), table() and to_markdown()
reach these through the adapter (httpbench/views.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..hints import hint

if TYPE_CHECKING:
    from ..capacity_result import CapacityResult, CapacityStep
    from ..comparison import Comparison


__all__ = ["comparison_text", "comparison_summary", "comparison_report", "comparison_markdown",
           "capacity_report", "capacity_found", "step_outcome"]


def _cell(value: float | None, spec: str, width: int = 0) -> str:
    """A row's figure by spec, "-" for None (nothing completed: no
    latency; no agent completed any: no fastest)."""
    return f"{'-' if value is None else format(value, spec):>{width}}"


def comparison_text(c: Comparison) -> str:
    """The side-by-side table, one row per agent and scenario."""
    head = (f"{'agent':<14}{'version':<10}{'scenario':<9}{'requests':>9}{'req/s':>10}"
            f"{'mean ms':>9}{'p99 ms':>9}{'failed':>7}{'non-2xx':>8}{'reconn':>7}"
            f"{'x fastest':>10}")
    lines = [head, "-" * len(head)]
    for row in c.rows():
        lines.append(f"{row['agent']:<14}{row['version'][:9]:<10}{row['scenario']:<9}"
                     f"{row['requests']:>9}{row['rps']:>10,.0f}{_cell(row['mean_ms'], '.3f', 9)}"
                     f"{_cell(row['p99_ms'], '.3f', 9)}{row['failed']:>7}{row['non_2xx']:>8}"
                     f"{row['reconnects']:>7}{_cell(row['of_fastest'], '.2f', 10)}")
    return "\n".join(lines)


def comparison_summary(c: Comparison) -> str:
    """The table and its notes (IPython's text display)."""
    return comparison_text(c) + "".join(f"\nnote: {n}" for n in c.warnings() + c.notes)


def comparison_report(c: Comparison, reports: bool = True) -> str:
    """Each agent's ab report when `reports`, then the table and notes."""
    parts = []
    if reports:
        for (agent, scenario), r in c.results.items():
            parts.append(f"== {agent} {r.agent_version}, {scenario} "
                         f"(Python {r.python_version})\n")
            parts.append(r.report())
    parts.append("== Side by side\n")
    parts.append(comparison_text(c) + "\n")
    parts.extend(f"note: {n}\n" for n in c.warnings() + c.notes)
    return "\n".join(parts)


def comparison_markdown(c: Comparison) -> str:
    lines = ["| agent | version | scenario | requests | req/s | mean ms | p99 ms | failed "
             "| non-2xx | reconnects | x fastest |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in c.rows():
        lines.append(f"| {row['agent']} | {row['version']} | {row['scenario']} | "
                     f"{row['requests']} | {row['rps']:,.0f} | {_cell(row['mean_ms'], '.3f')} | "
                     f"{_cell(row['p99_ms'], '.3f')} | {row['failed']} | {row['non_2xx']} | "
                     f"{row['reconnects']} | {_cell(row['of_fastest'], '.2f')} |")
    return "\n".join(lines) + "\n"


def step_outcome(s: CapacityStep) -> str:
    """A capacity stage's outcome in words: held, what broke, or why it
    did not count."""
    what = "held" if s.held else s.why
    if not s.counts:
        what = f"not counted: the client could not keep up ({s.client}; {what})"
    elif s.client:
        what = f"held, though the client was bound ({s.client})"
    return what + (f" (repeat {s.repeat})" if s.repeat else "")


def capacity_report(c: CapacityResult) -> str:
    """The stages, then the capacity found, or why none was."""
    lines = [f"Capacity of {c.url} within {c.slo}, error rate at most "
             f"{c.max_error_rate:g}:",
             f"{'target/s':>10} {'achieved/s':>11} {'p50 ms':>8} {'p99 ms':>8} "
             f"{'errors':>7}  outcome"]
    for s in c.steps:
        p50, p99 = (f"{s.p50 * 1e3:.2f}", f"{s.p99 * 1e3:.2f}") if s.latency_known else ("-", "-")
        lines.append(f"{s.target:>10,.0f} {s.achieved:>11,.0f} {p50:>8} {p99:>8} {s.errors:>7}  "
                     f"{step_outcome(s)}")
    few = capacity_few(c)
    if few:
        lines.append(few)
    lines.append(f"capacity: {capacity_found(c)}")
    noted = capacity_noted(c)
    if noted:
        lines.append(noted)
    return "\n".join(lines)


def capacity_few(c: CapacityResult) -> str:
    """Which stages timed fewer responses than the SLO's statistic needs
    to be more than the slowest one's (p99: 100), or "": their verdict
    stands, on what little they measured."""
    from ..capacity_result import needed
    stat, need = max(((stat, needed(stat)) for stat, _ in c.slo_bounds()), key=lambda x: x[1])
    # (A stage with none timed has its note: nothing completed.)
    few = [s for s in c.steps if s.timed and s.timed < need]
    if not few:
        return ""
    fewest = min(few, key=lambda s: s.timed or 0)
    return (f"too few to judge: {len(few)} of the {len(c.steps)} stages timed fewer than the "
            f"{need:,} responses {stat} needs (the fewest {fewest.timed or 0:,}, at "
            f"{fewest.target:,.0f}/s): their {stat} is their slowest answer's; "
            + hint("stages"))


def capacity_noted(c: CapacityResult) -> str:
    """The first stage's note that has one (nothing completed, or nothing
    was 2xx: a wrong path holds any rate), with how many stages had one;
    or ""."""
    noted = [s for s in c.steps if s.note]
    if not noted:
        return ""
    more = f" (as in {len(noted) - 1} more of the {len(c.steps)} stages)" if len(noted) > 1 \
        else ""
    return f"at {noted[0].target:,.0f}/s: {noted[0].note}{more}"


def capacity_found(c: CapacityResult) -> str:
    """What the search found, in words: the capacity, or why none was."""
    held, broke = c.bounds
    span = (f"held up to {held:,.0f}/s" if held is not None else "nothing held") + \
        (f", broke from {broke:,.0f}/s" if broke is not None else "")
    if c.interrupted:
        return f"not found: the search was interrupted during a stage ({span} before it)"
    if c.limited_by == "client":
        return (f"not found: the client, not the server, set the limit ({span}; the client "
                f"could not keep up: {c.steps[-1].client})")
    if c.limited_by == "noise":
        return f"not found: {c.noisy} ({span} before it)"
    if c.met and c.limited_by == "server":
        return f"{c.rate:,.0f} req/s ({span}; limited by the server)"
    if c.met:
        return f"{c.rate:,.0f} req/s ({span}; nothing broke up to the highest rate tried)"
    low = min(c.steps, key=lambda s: s.target)
    return f"SLO not met even at {low.target:,.2f} req/s ({low.why})"
