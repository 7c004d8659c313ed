"""The pictures of results as inline SVG (render.svg): the timeline, the
latency by percentile (HdrHistogram's plot), the histogram, a scenario's
requests, a capacity search's knee and a comparison's bars. Each takes
one result or several, (label, Result) pairs, drawn over each other. The
notebook's summary and the standalone report draw with these.

The rules the matplotlib plots (render.plots) keep hold here too: a last,
partial second is left out of the rate lines (drawn as a second it would
read as a collapse), a shaped run's target is drawn over it, a capacity
plot has its SLO's bounds, and times are in us, ms or s as fits."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .svg import Axis, Series, bars, chart, time_unit
from .text import percent_label

if TYPE_CHECKING:
    from ..capacity_result import CapacityResult
    from ..comparison import Comparison
    from ..result import Latency, Result, Second

__all__ = ["full_seconds", "shape_points", "timeline_charts", "throughput_chart",
           "latency_timeline_chart", "percentile_chart", "histogram_chart", "percentile_points",
           "by_name_chart", "capacity_chart", "comparison_chart"]

Named = Sequence[tuple[str, "Result"]]


def full_seconds(r: Result) -> tuple[list[Second], float]:
    """The timeline's seconds to draw, and the length of a last, partial
    second left out (0 when none was)."""
    seconds = list(r.timeline)
    if len(seconds) > 1:
        part = r.time_taken - seconds[-1].t
        if 0 < part < 0.999:
            seconds.pop()
            return seconds, part
    return seconds, 0.0


def partial_words(part: float, requests: int) -> str:
    """What full_seconds() left out, in words: "the run's last 25 us (3
    requests) not drawn: less than a whole second, it would read as a
    fall". The requests stay in every total."""
    scale, unit = time_unit(part)
    return (f"the run's last {part * scale:.3g} {unit} ({requests:,} requests) not drawn: less "
            "than a whole second, it would read as a fall")


# The per-second latencies come from a coarse histogram per second: each
# is within this share of the exact value (HdrHistogram's 3 bits).
SECOND_PRECISION = "each second's value within 12.5% of the exact one"


def timeline_charts(results: Named, latency: bool = True) -> str:
    """The per-second pictures (requests per second, and with latency the
    p50 and p99 per second), or, when a run lasted less than one whole
    second, a line saying why there are none: one partial second is no
    line (a report once drew two empty charts for such runs)."""
    short = [(label, r) for label, r in results if not r.timeline or r.time_taken < 1.0]
    if short:
        who = ", ".join(f"{label or 'the run'} lasted {r.time_taken:.3g} s" for label, r in short)
        return (f"<p class=\"no-chart\">No per-second charts: {html.escape(who)}, less than "
                "one whole second (its figures are in the tables).</p>")
    pics = throughput_chart(results)
    return pics + latency_timeline_chart(results) if latency else pics


def shape_points(r: Result) -> tuple[list[float], list[float]]:
    """The target rate over the run, as (instants, rates) of its corners: a
    shape's stages ramp linearly from the level before (0 at the start); a
    constant rate is flat. Empty for a closed loop."""
    if r.stages:
        xs, ys, t = [0.0], [0.0], 0.0
        for seconds, rate in r.stages:
            t += seconds
            xs.append(t)
            ys.append(rate)
        return xs, ys
    if r.rate:
        return [0.0, r.time_taken], [r.rate, r.rate]
    return [], []


def _who(label: str, what: str) -> str:
    return f"{label}: {what}" if label else what


def _stops(r: Result) -> Series | None:
    """Ctrl-C and lost workers, as marks on a timeline."""
    xs, notes = [], []
    if r.interrupted_at is not None:
        xs.append(r.interrupted_at)
        notes.append("stopped (Ctrl-C)")
    for w in r.workers:
        if w.lost and w.lost_at is not None:
            xs.append(w.lost_at)
            notes.append(f"lost {w.address}")
    return Series("stopped or lost", xs, [0.0] * len(xs), "marks", 6, notes) if xs else None


def throughput_chart(results: Named) -> str:
    """Requests per second, each second drawn at its middle; one run's
    failures and non-2xx per second and its target beside it."""
    series: list[Series] = []
    notes = []
    for i, (label, r) in enumerate(results):
        seconds, part = full_seconds(r)
        if part:
            last = r.timeline[-1].complete
            notes.append(f"{_who(label, '')}{partial_words(part, last)}".strip())
        mids = [x.t + 0.5 for x in seconds]
        series.append(Series(_who(label, "requests/s"), mids, [x.complete for x in seconds],
                             color=i))
        if len(results) == 1:
            if any(x.failed for x in seconds):
                series.append(Series("failed/s", mids, [x.failed for x in seconds], color=1))
            if any(x.non_2xx for x in seconds):
                series.append(Series("non-2xx/s", mids, [x.non_2xx for x in seconds], color=4))
        xs, ys = shape_points(r)
        if xs and (len(results) == 1 or i == 0 or shape_points(results[0][1]) != (xs, ys)):
            series.append(Series(_who(label, "target rate"), xs, ys, "dash", 2 if
                                 len(results) == 1 else i))
        stops = _stops(r)
        if stops is not None:
            series.append(stops)
    note = f" ({'; '.join(notes)})" if notes else ""
    return chart("Requests per second", series, Axis("seconds into the run" + note, lo=0.0),
                 Axis("requests per second", lo=0.0), kind="throughput")


def latency_timeline_chart(results: Named) -> str:
    """p50 and p99 per second (SECOND_PRECISION); several runs: p99 each."""
    top = max((x.p99 or 0.0 for _, r in results for x in r.timeline), default=0.0)
    scale, unit = time_unit(top)
    series = []
    for i, (label, r) in enumerate(results):
        seconds, _ = full_seconds(r)
        got = [x for x in seconds if x.p99 is not None and x.complete]
        mids = [x.t + 0.5 for x in got]
        if len(results) == 1:
            series.append(Series("p50", mids, [(x.p50 or 0.0) * scale for x in got], color=0))
            series.append(Series("p99", mids, [(x.p99 or 0.0) * scale for x in got], color=1))
        else:
            series.append(Series(_who(label, "p99"), mids, [(x.p99 or 0.0) * scale for x in got],
                                 color=i))
    return chart(f"Latency per second ({SECOND_PRECISION})", series,
                 Axis("seconds into the run", lo=0.0), Axis(f"latency ({unit})", lo=0.0),
                 kind="latency-timeline")


# The "number of nines" axis: x is 1/(1-p), drawn on a log scale.
_NINES = [(1 / (1 - p / 100), f"{percent_label(p)}%")
          for p in (0, 90, 99, 99.9, 99.99, 99.999, 99.9999)]


def percentile_points(lat: Latency) -> tuple[list[float], list[float]]:
    """HdrHistogram's percentile plot of a histogram: x = 1/(1-p) in steps
    of a twentieth of a decade, as far as its count resolves (1/(1-p) <=
    count), y the latency in seconds."""
    if not lat.count:
        return [], []
    top = math.log10(max(1, lat.count))
    xs, ys = [], []
    k = 0
    while k * 0.05 <= top + 1e-9:
        x = 10 ** (k * 0.05)
        xs.append(x)
        ys.append(lat.percentile(100 * (1 - 1 / x)))
        k += 1
    return xs, ys


def percentile_chart(results: Named, what: str = "latency") -> str:
    """Latency by percentile on the number-of-nines axis; under a rate the
    uncorrected latency beside the corrected one."""
    lines = []
    for i, (label, r) in enumerate(results):
        lat = r.latency if what == "latency" else getattr(r, what)
        name = "corrected" if r.rate and len(results) == 1 else "latency"
        lines.append((_who(label, name), lat, i))
        if r.rate and len(results) == 1:
            lines.append(("uncorrected (from the send)", r.latency_uncorrected, 1))
    top = max((lat.max for _, lat, _ in lines if lat.count), default=0.0)
    scale, unit = time_unit(top)
    series, hi = [], 1.0
    for name, lat, color in lines:
        xs, ys = percentile_points(lat)
        hi = max(hi, xs[-1] if xs else 1.0)
        series.append(Series(name, xs, [y * scale for y in ys], color=color))
    return chart("Latency by percentile", series,
                 Axis("percentile", log=True, lo=1.0, hi=max(hi, 10.0), ticks=_NINES),
                 Axis(f"latency ({unit})", lo=0.0), kind="percentiles")


def histogram_chart(results: Named, bins: int = 60) -> str:
    """How many requests took how long: the histogram's buckets gathered
    into `bins` equal steps on a log scale, drawn as steps."""
    spans = [b for _, r in results for b in r.latency.buckets()]
    if not spans:
        return "<p>No latencies were recorded.</p>"
    lo = min(b[0] for b in spans) or 1e-9
    hi = max(b[1] for b in spans)
    scale, unit = time_unit(hi)
    step = (math.log(hi) - math.log(lo)) / bins if hi > lo else 1.0
    edges = [math.exp(math.log(lo) + i * step) for i in range(bins + 1)]
    series = []
    for i, (label, r) in enumerate(results):
        counts = [0] * bins
        for b_lo, _, n in r.latency.buckets():
            counts[min(bins - 1, max(0, int((math.log(max(b_lo, lo)) - math.log(lo)) / step)))] \
                += n
        xs, ys = [], []
        for k, n in enumerate(counts):
            xs += [edges[k] * scale, edges[k + 1] * scale]
            ys += [n, n]
        series.append(Series(_who(label, "requests"), xs, ys, color=i))
    return chart("Latency histogram", series, Axis(f"latency ({unit}, log scale)", log=True),
                 Axis("requests", lo=0.0), kind="histogram")


def by_name_chart(r: Result) -> str:
    """A scenario's requests: each one's latency by percentile."""
    return percentile_chart(list(r.by_name.items()))


def capacity_chart(c: CapacityResult) -> str:
    """p99 and p50 against the rate asked for, in order of rate; held
    stages as dots and broken ones as crosses; the SLO's bounds and the
    capacity found; a stage that timed nothing has no latency to draw (the
    table beside says why it broke)."""
    steps = sorted((s for s in c.steps if s.latency_known), key=lambda s: s.target)
    bounds = c.slo_bounds()
    top = max([s.p99 for s in steps] + [v for _, v in bounds], default=0.0)
    scale, unit = time_unit(top)
    xs = [s.target for s in steps]
    held = [s for s in steps if s.held]
    broke = [s for s in steps if not s.held]
    series = [Series("p99", xs, [s.p99 * scale for s in steps], color=0),
              Series("p50", xs, [s.p50 * scale for s in steps], color=1),
              Series("held", [s.target for s in held], [s.p99 * scale for s in held], "dots", 2),
              Series("broke", [s.target for s in broke], [s.p99 * scale for s in broke],
                     "crosses", 1)]
    if c.rate > 0:
        series.append(Series(f"capacity {c.rate:,.0f}/s", [c.rate], [0.0], "marks", 6))
    hlines = [(v * scale, f"SLO {stat} < {v * scale:g} {unit}", 3 + k)
              for k, (stat, v) in enumerate(bounds)]
    return chart(f"Capacity within {c.slo}", series,
                 Axis("requests per second asked for (the stage's rate)", lo=0.0),
                 Axis(f"latency ({unit})", lo=0.0), hlines=hlines, kind="capacity")


def comparison_chart(cmp: Comparison) -> list[str]:
    """Bars of req/s per agent and scenario (log scale: the Python clients
    would vanish beside the C loop on a linear one), each with its ratio to
    the fastest; then p99 the same way."""
    agents = list(dict.fromkeys(a for a, _ in cmp.results))
    rps, p99, notes = [], [], []
    for s in cmp.scenarios:
        vals = [cmp.results[a, s].rps if (a, s) in cmp.results else 0.0 for a in agents]
        best = max(vals, default=0.0)
        rps.append((f"{s} req/s", vals))
        notes.append([f"{v / best:.2f}x" if best and v else "" for v in vals])
        p99.append((f"{s} p99", [cmp.results[a, s].latency.p99 if (a, s) in cmp.results
                                 else 0.0 for a in agents]))
    top = max((v for _, vs in p99 for v in vs), default=0.0)
    scale, unit = time_unit(top)
    return [bars("Requests per second by client", agents, rps, "requests per second (log)",
                 log=True, notes=notes),
            bars("p99 latency by client", agents,
                 [(g, [v * scale for v in vs]) for g, vs in p99], f"p99 latency ({unit}, log)",
                 log=True)]
