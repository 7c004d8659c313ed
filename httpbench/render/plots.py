"""matplotlib pictures of a Result: latency by percentile (HdrHistogram's
plot), the histogram, the timeline. matplotlib is imported when drawn."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .charts import full_seconds, partial_words, shape_points
from .text import percent_label

if TYPE_CHECKING:
    from ..capacity_result import CapacityResult
    from ..comparison import Comparison
    from ..result import Result

__all__ = ["plot", "pyplot"]


def pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plot() needs matplotlib: pip install 'httpbench[plot]'") from None
    return plt


def plot(r: Result, kind: str = "percentiles", ax: Any = None) -> Any:
    """Result.plot: "percentiles", "histogram" or "timeline", on ax (a new
    figure's when None); returns the Axes."""
    plt = pyplot()
    if kind not in ("percentiles", "histogram", "timeline"):
        raise ValueError(f"kind must be 'percentiles', 'histogram' or 'timeline', not {kind!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    title = f"{r.method} {r.path} ({r.agent}, -c {r.concurrency})"
    if kind == "percentiles":
        _plot_percentiles(r, ax)
    elif kind == "histogram":
        _plot_histogram(r, ax)
    else:
        _plot_timeline(r, ax)
    ax.set_title(title)
    ax.figure.tight_layout()  # labels and title inside the figure
    return ax


def _plot_percentiles(r: Result, ax: Any) -> None:
    # HdrHistogram's picture: x is 1/(1-p) on a log scale, so the tail
    # (99%, 99.9%, 99.99%) gets as much room as the body.
    ps = [p for p in (0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999)
          if r.latency.count * (1 - p / 100) >= 0.5 or p <= 99]
    for lat, label in ((r.latency, "latency"),) + (
            ((r.latency_uncorrected, "uncorrected"),) if r.rate else ()):
        xs = [1 / (1 - p / 100) for p in ps]
        ax.plot(xs, [lat.percentile(p) * 1e3 for p in ps], marker="o", label=label)
    ax.set_xscale("log")
    ticks = [p for p in (0, 90, 99, 99.9, 99.99, 99.999) if p in ps]
    ax.set_xticks([1 / (1 - p / 100) for p in ticks])
    ax.set_xticklabels([f"{percent_label(p)}%" for p in ticks])
    ax.minorticks_off()
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms)")
    if r.rate:
        ax.legend()


def _plot_histogram(r: Result, ax: Any, bins: int = 60) -> None:
    buckets = r.latency.buckets()
    if not buckets:
        raise ValueError("no latencies were recorded")
    # The histogram's own buckets are finer than a picture needs: gather
    # them into `bins` equal steps on a log scale.
    lo, hi = buckets[0][0] * 1e3, buckets[-1][1] * 1e3
    step = (math.log(hi) - math.log(lo)) / bins if hi > lo else 1.0
    counts = [0] * bins
    for b_lo, _, n in buckets:
        counts[min(bins - 1, int((math.log(b_lo * 1e3) - math.log(lo)) / step))] += n
    edges = [math.exp(math.log(lo) + i * step) for i in range(bins + 1)]
    widths = [b - a for a, b in zip(edges, edges[1:], strict=False)]
    ax.bar(edges[:-1], counts, width=widths, align="edge")
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("requests")


def _plot_timeline(r: Result, ax: Any) -> None:
    if not r.timeline:
        raise ValueError("this result has no timeline: only httpbench's own loop records one")
    # Each second is drawn at its middle as what completed in it. A last,
    # partial second is left out of the rate line (its requests stay in the
    # totals): drawn as a second it would read as a collapse.
    seconds, part = full_seconds(r)
    last = r.timeline[-1]
    note = f" ({partial_words(part, last.complete)})" if part else ""
    mids = [x.t + 0.5 for x in seconds]
    ax.plot(mids, [x.complete for x in seconds], marker="o", label="requests completed")
    failed = [x.failed for x in seconds]
    if any(failed):
        ax.plot(mids, failed, marker="x", color="C3", label="failed")
    xs, ys = shape_points(r)
    if xs:
        ax.plot(xs, ys, color="C2", linestyle="--", label="target rate")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds into the run" + note)
    ax.set_ylabel("requests per second")
    p99 = ax.twinx()
    p99.plot(mids, [(x.p99 or 0.0) * 1e3 for x in seconds], color="black", marker=".",
             label="p99 (to within 12.5%)")
    p99.set_ylim(bottom=0)
    p99.set_ylabel("p99 latency (ms)")
    lines = ax.get_legend_handles_labels()
    more = p99.get_legend_handles_labels()
    # Below the axes, where it hides no point.
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper center",
              bbox_to_anchor=(0.5, -0.2), ncol=4, frameon=False, fontsize=8)


# Borders and shading from the text colour, so the table reads in light and
# dark notebook themes alike; numbers right-aligned in tabular figures.


def comparison_plot(c: Comparison, ax: Any = None) -> Any:
    """Comparison.plot(): bars of req/s per agent and scenario on a log
    scale, each labelled with its ratio to the fastest, p99 as points on a
    second axis (its docstring says the why of each)."""
    try:
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    except ImportError:
        raise ImportError("plot() needs matplotlib: pip install 'httpbench[plot]'") from None
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    agents = list(dict.fromkeys(a for a, _ in c.results))
    width = 0.8 / max(1, len(c.scenarios))
    p99 = ax.twinx()
    # x in data, y as a fraction of the axes: the labels' band at the foot.
    foot = ax.get_xaxis_transform()
    lats: list[float] = []
    for i, scenario in enumerate(c.scenarios):
        xs = [j + i * width for j in range(len(agents))]
        rps = [c.results[a, scenario].rps if (a, scenario) in c.results else 0.0
               for a in agents]
        lat = [c.results[a, scenario].latency.p99 * 1e3 if (a, scenario) in c.results
               else float("nan") for a in agents]
        lats += [v for v in lat if v > 0]
        ax.bar(xs, rps, width, label=f"{scenario} req/s")
        best = max(rps, default=0.0)
        for x, v in zip(xs, rps, strict=True):
            if best and v:
                ax.text(x, 0.02, f"{v / best:.2f}x", transform=foot, ha="center",
                        va="bottom", fontsize=8)
        p99.plot(xs, lat, "o", markersize=5, markeredgecolor="white",
                 color="black" if i == 0 else "grey", label=f"{scenario} p99")
    ax.set_xticks([j + width * (len(c.scenarios) - 1) / 2 for j in range(len(agents))])
    ax.set_xticklabels(agents, rotation=20)
    ax.set_yscale("log")
    ax.set_ylabel("requests per second (log scale)")
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _count_label(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    p99.set_yscale("log")
    if lats:
        # A third of the lowest below it: no point reaches the labels' band.
        p99.set_ylim(min(lats) / 3, max(lats) * 3)
    p99.set_ylabel("p99 latency (log scale)")
    p99.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    p99.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _latency_label(v)))
    p99.yaxis.set_minor_formatter(NullFormatter())
    # One legend, below the axes, where it hides no bar and no point.
    bars, bar_labels = ax.get_legend_handles_labels()
    dots, dot_labels = p99.get_legend_handles_labels()
    ax.legend(bars + dots, bar_labels + dot_labels, loc="upper center",
              bbox_to_anchor=(0.5, -0.22), ncol=4, frameon=False)
    ax.set_title("httpbench: the same scenario through each HTTP client")
    ax.figure.tight_layout()
    return ax


def _count_label(n: float) -> str:
    """An axis tick of a count: 600, 6k, 1.5M."""
    for scale, unit in ((1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{n:g}"


def _latency_label(ms: float) -> str:
    """An axis tick of milliseconds as a person reads it: 600 us, 1.5 ms, 2 s."""
    if ms >= 1000:
        return f"{ms / 1000:g} s"
    if ms >= 1:
        return f"{ms:g} ms"
    return f"{ms * 1000:g} us"


def capacity_plot(c: CapacityResult, ax: Any = None) -> Any:
    """CapacityResult.plot(): p99 and p50 against the rate asked for, held
    stages as dots and broken ones as crosses, the SLO's bounds and the
    capacity found."""
    from ..capacity_result import parse_slo

    plt = pyplot()
    if ax is None:
        _, ax = plt.subplots()
    # (a stage that timed nothing has no latency to draw: the table says why)
    steps = sorted((s for s in c.steps if s.latency_known), key=lambda s: s.target)
    xs = [s.target for s in steps]
    ax.plot(xs, [s.p99 * 1e3 for s in steps], "-", color="C0", label="p99")
    ax.plot(xs, [s.p50 * 1e3 for s in steps], "-", color="C1", label="p50")
    for s in steps:
        ax.plot(s.target, s.p99 * 1e3, "o" if s.held else "x", color="C0")
    for k, (stat, limit) in enumerate(parse_slo(c.slo)):
        ax.axhline(limit * 1e3, color=f"C{k + 3}", linestyle="--",
                   label=f"SLO {stat} < {limit * 1e3:g} ms")
    if c.rate > 0:
        ax.axvline(c.rate, color="grey", linestyle=":", label=f"capacity {c.rate:,.0f}/s")
    ax.set_xlabel("requests per second asked for (the stage's rate)")
    ax.set_ylabel("latency (ms)")
    ax.set_title(f"Capacity within {c.slo}")
    ax.legend(fontsize=8)
    return ax
