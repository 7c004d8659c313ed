"""HdrHistogram's percentile distribution text, as wrk2 prints it and
HdrHistogram's plotter reads it (`--hgrm`, Latency.to_hgrm)."""

from __future__ import annotations

import math

from .._core import Histogram

__all__ = ["hgrm"]


def hgrm(h: Histogram, scale: float = 1e6, ticks_per_half: int = 5) -> str:
    """Value (milliseconds unless `scale`, nanoseconds per unit, says
    otherwise), Percentile, TotalCount and 1/(1-Percentile), then the mean,
    deviation, max and count."""
    lines = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} "
             f"{'1/(1-Percentile)':>14}", ""]
    buckets = h.buckets()
    total = h.count

    def at_or_below(v: int) -> int:
        return sum(n for lo, _, n in buckets if lo <= v)

    p = 0.0
    while total and p < 100.0 and (100.0 - p) / 100.0 * total >= 1.0:
        v = h.percentile(p)
        lines.append(f"{v / scale:12.3f} {p / 100:2.12f} {at_or_below(v):10d} "
                     f"{1 / (1 - p / 100):14.2f}")
        # HdrHistogram's percentile iterator: ticks_per_half steps in each
        # halving of the distance to 100%.
        halvings = int(math.log2(100.0 / (100.0 - p)))
        p += 100.0 / (ticks_per_half * 2 ** (halvings + 1))
    if total:
        lines.append(f"{h.max / scale:12.3f} {1.0:2.12f} {total:10d}")
    lines.append(f"#[Mean    = {h.mean / scale:12.3f}, "
                 f"StdDeviation   = {h.stdev / scale:12.3f}]")
    lines.append(f"#[Max     = {h.max / scale:12.3f}, Total count    = {total:12d}]")
    lines.append(f"#[Buckets = {len(buckets):12d}, SubBuckets     = {128:12d}]")
    return "\n".join(lines) + "\n"
