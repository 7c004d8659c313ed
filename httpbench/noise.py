"""Whether a benchmark figure changed beyond its run-to-run noise.

    v = decide("rps", now=[9.1e4, 9.4e4, 8.8e4], base=[1.5e5, 1.4e5, 1.6e5], threshold=10)
    v.fails          # True: 39% lower, past 10% and past the noise band
    v.undecided      # past the threshold but inside the noise: no verdict
    v.text           # one line saying which, with the figures

The rule (the pytest plugin's --httpbench-compare-fail uses it, and so does
the HTML report that sets two runs side by side):

- Each side is a set of rounds; its figure is the median of its rounds.
- Everything is judged on the logarithm of the ratio, log(now / base): a
  25x fall is as far from no change as a 25x rise, where on a linear scale
  a fall in req/s can never pass 100% and a noisy enough baseline could
  never fail anything. `change` is shown as now / base - 1, signed (a fall
  is negative), the same in every table and message.
- A side's spread s is robust: 1.4826 x the median absolute deviation of
  its rounds' logs (for normal noise the standard deviation; one wild
  round, which the standard deviation squares, moves it hardly at all, as
  Google Benchmark's compare.py prefers rank statistics over means for
  the same reason); 0 for a single round.
- The noise band is 2 x sqrt(s_now^2 + s_base^2): two standard deviations
  of the difference of two independent figures, on the log scale.
- worse is the log change in the regression's direction (for req/s a
  fall, for latencies a rise). The threshold keeps its plain meaning (a
  10% threshold on req/s: 10% fewer; on p99: 10% longer), taken to the
  log scale. The gate fails when worse exceeds both the threshold and
  the band; passes within both; when worse is past
  the threshold but inside the band it cannot decide, and says so,
  passing. When the band is wider than the threshold the baseline (or
  this run) is too noisy to judge a change of the threshold's size, and
  the verdict says so, yet still fails a change far beyond the band.

No dependency outside the standard library, and none on pytest.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

__all__ = ["Verdict", "decide", "spread", "band", "HIGHER_IS_BETTER", "MAD_SCALE"]

# Figures for which a rise is an improvement; for every other (latencies)
# a rise is a regression.
HIGHER_IS_BETTER = frozenset({"rps"})
# The median absolute deviation times this estimates the standard
# deviation of normal noise.
MAD_SCALE = 1.4826


def spread(values: Sequence[float]) -> float:
    """Round-to-round noise on the log scale: 1.4826 x the median absolute
    deviation of the rounds' logs (about the relative standard deviation
    for small noise); 0 with fewer than two rounds or a round not above 0."""
    if len(values) < 2 or min(values) <= 0:
        return 0.0
    logs = [math.log(v) for v in values]
    mid = statistics.median(logs)
    return MAD_SCALE * statistics.median(abs(x - mid) for x in logs)


def band(s_now: float, s_base: float) -> float:
    """The noise band on the log scale: 2 x sqrt(s_now^2 + s_base^2)."""
    return 2.0 * math.hypot(s_now, s_base)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What decide() found: the medians, the change (now / base - 1,
    signed), both spreads and the band (log scale; shown as factors), the
    threshold (a fraction), and worse (the log change in the regression's
    direction: positive when worse)."""

    metric: str
    now: float
    base: float
    change: float
    s_now: float
    s_base: float
    band: float
    threshold: float
    worse: float

    @property
    def limit(self) -> float:
        """The threshold on the log scale, in the regression's direction:
        a fall of `threshold` for req/s (log(1 / (1 - t)); a fall of 100%
        or more is no limit), a rise of it for latencies (log(1 + t))."""
        if self.metric in HIGHER_IS_BETTER:
            return -math.log1p(-self.threshold) if self.threshold < 1 else math.inf
        return math.log1p(self.threshold)

    @property
    def fails(self) -> bool:
        return self.worse > self.limit and self.worse > self.band

    @property
    def undecided(self) -> bool:
        return self.worse > self.limit and not self.worse > self.band

    @property
    def better(self) -> bool:
        """Improved past both the threshold and the band."""
        return -self.worse > self.limit and -self.worse > self.band

    @property
    def noisy(self) -> bool:
        """The band is wider than the threshold: a change of the
        threshold's size could not have been seen."""
        return self.band > self.limit

    @property
    def ratio_text(self) -> str:
        """The change as the ratio now / base, and signed: "x0.69 (-30.5%)"."""
        return f"x{self.change + 1:.2f} ({self.change:+.1%})"

    @property
    def band_text(self) -> str:
        """The band as the ratios it spans, the same scale as ratio_text's:
        "x0.73-x1.38" (a ratio inside it is within the noise)."""
        return f"x{math.exp(-self.band):.2f}-x{math.exp(self.band):.2f}"

    @property
    def limit_text(self) -> str:
        """The threshold as the ratio it allows: "x0.90 (10%)" for req/s,
        "x1.10 (10%)" for a latency."""
        ratio = math.exp(-self.limit if self.metric in HIGHER_IS_BETTER else self.limit)
        return f"x{ratio:.2f} ({self.threshold:.0%})"

    @property
    def outside(self) -> str:
        """"outside" or "inside": where the ratio lies against the band."""
        return "outside" if abs(self.worse) > self.band else "inside"

    def too_noisy(self) -> str:
        """What to do when the band is wider than the threshold ("" when it
        is not)."""
        if not self.noisy:
            return ""
        return (f"the baseline is too noisy to judge a change of {self.threshold:.0%} (noise "
                f"band {self.band_text}): record it with more rounds or on a quieter machine")

    @property
    def text(self) -> str:
        """One line, every figure a ratio now / base on one scale: the
        change, the threshold and the noise band, and the verdict."""
        said = (f"{self.metric} {self.ratio_text} ({self.base:.6g} -> {self.now:.6g}), "
                f"{self.outside} the noise band {self.band_text} (two standard deviations "
                f"of the rounds' spread, {self.s_now:.1%} now and {self.s_base:.1%} in the "
                f"baseline), threshold {self.limit_text}")
        if self.fails:
            said += ": regressed"
        elif self.undecided:
            said += ": past the threshold but inside the noise: cannot decide"
        elif self.better:
            said += ": improved"
        else:
            said += ": within the threshold"
        noisy = self.too_noisy()
        return f"{said}; {noisy}" if noisy else said


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
    m_now, m_base = float(statistics.median(now)), float(statistics.median(base))
    if m_base <= 0 or m_now <= 0:
        log_change = 0.0 if m_now == m_base else (math.inf if m_now > m_base else -math.inf)
    else:
        log_change = math.log(m_now / m_base)
    change = m_now / m_base - 1 if m_base > 0 else 0.0
    worse = -log_change if metric in HIGHER_IS_BETTER else log_change
    s_now, s_base = spread(now), spread(base)
    return Verdict(metric, m_now, m_base, change, s_now, s_base, band(s_now, s_base),
                   threshold / 100.0, worse)
