"""Whether a benchmark figure changed beyond its run-to-run noise.

    v = decide("rps", now=[9.1e4, 9.4e4, 8.8e4], base=[1.5e5, 1.4e5, 1.6e5], threshold=10)
    v.fails          # True: 39% worse, past 10% and past the noise band
    v.undecided      # past the threshold but inside the noise: no verdict
    v.text           # one line saying which, with the figures

The rule (the pytest plugin's --httpbench-compare-fail uses it, and so may
any report that sets two runs side by side):

- Each side is a set of rounds. Its figure is the median of its rounds;
  its spread s is the rounds' standard deviation over their mean (0 for a
  single round).
- change is how much worse the figure is, as a fraction of the baseline's
  (for req/s a fall, for latencies a rise; an improvement is negative).
- The noise band is 2 x sqrt(s_now^2 + s_base^2): two standard deviations
  of the difference of two independent figures, each as noisy as one
  round (wider than the medians' own noise, so an unchanged figure rarely
  leaves it).
- The gate fails when change > threshold and change > the band. When
  change > threshold but lies inside the band it cannot decide, and says
  so, passing: the noise is too large to tell. Otherwise it passes.

No dependency outside the standard library, and none on pytest.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

__all__ = ["Verdict", "decide", "spread", "band", "HIGHER_IS_BETTER"]

# Figures for which a rise is an improvement; for every other (latencies)
# a rise is a regression.
HIGHER_IS_BETTER = frozenset({"rps"})


def spread(values: Sequence[float]) -> float:
    """Round-to-round noise: the standard deviation over the mean (0 with
    fewer than two rounds or a mean of 0)."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean > 0 else 0.0


def band(s_now: float, s_base: float) -> float:
    """The noise band, a fraction: 2 x sqrt(s_now^2 + s_base^2)."""
    return 2.0 * math.hypot(s_now, s_base)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What decide() found: the medians, the change (a fraction, positive
    when worse), both spreads, the band and the threshold (fractions)."""

    metric: str
    now: float
    base: float
    change: float
    s_now: float
    s_base: float
    band: float
    threshold: float

    @property
    def fails(self) -> bool:
        return self.change > self.threshold and self.change > self.band

    @property
    def undecided(self) -> bool:
        return self.change > self.threshold and not self.change > self.band

    @property
    def text(self) -> str:
        said = (f"{self.metric} {self.change:+.1%} worse ({self.base:.6g} -> {self.now:.6g}); "
                f"noise band {self.band:.1%} (2 x sqrt({self.s_now:.1%}^2 + "
                f"{self.s_base:.1%}^2)), threshold {self.threshold:.0%}")
        if self.fails:
            return f"{said}: regressed"
        if self.undecided:
            return f"{said}: past the threshold but inside the noise: cannot decide"
        return f"{said}: within the threshold"


def decide(metric: str, now: Sequence[float], base: Sequence[float],
           threshold: float) -> Verdict:
    """The verdict on `metric` from each side's rounds; threshold in
    percent (10 for 10%). ValueError for an empty side or a threshold that
    is not a number from 0 to 1000."""
    if not now or not base:
        raise ValueError("decide needs at least one round on each side")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or \
            not 0 <= threshold <= 1000:
        raise ValueError(f"threshold must be a percentage from 0 to 1000, not {threshold!r}")
    m_now, m_base = statistics.median(now), statistics.median(base)
    if m_base <= 0:
        change = 0.0
    elif metric in HIGHER_IS_BETTER:
        change = (m_base - m_now) / m_base
    else:
        change = (m_now - m_base) / m_base
    s_now, s_base = spread(now), spread(base)
    return Verdict(metric, float(m_now), float(m_base), change, s_now, s_base,
                   band(s_now, s_base), threshold / 100.0)
