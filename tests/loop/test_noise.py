"""httpbench.noise: the rule the pytest gate and the HTML report judge a
change by, on the logarithm of the ratio, with robust spreads."""

from __future__ import annotations

import math
import statistics

import pytest

from httpbench import noise


def test_a_25x_fall_fails_against_a_baseline_whose_rounds_spread_73_percent():
    """It passed as "this gate cannot decide": on a linear scale a fall in
    req/s never passes 100%, and 2 x sqrt(s_now^2 + s_base^2) with a 73%
    spread is wider than that. On the log scale a 25x fall is log(25) =
    3.2 away, and one wild round does not widen a robust spread."""
    base = [18565 * f for f in (1.0, 0.2, 2.4, 0.95, 1.05)]
    assert 0.7 < statistics.stdev(base) / statistics.fmean(base) < 0.76  # the filed case's
    v = noise.decide("rps", [739, 745, 735], base, 10)
    assert v.fails and not v.undecided and v.change == pytest.approx(739 / 18565 - 1)
    assert v.worse == pytest.approx(math.log(18565 / 739))
    # The baseline is too noisy for 10%, and the verdict says so, yet fails.
    assert v.noisy and v.too_noisy() in v.text
    assert v.too_noisy().startswith("the baseline is too noisy to judge a change of 10% (noise")
    assert v.too_noisy().endswith("record it with more rounds or on a quieter machine")


def test_a_rise_and_a_fall_of_the_same_factor_are_equally_far():
    base = [1000.0, 1010.0, 990.0]
    up = noise.decide("p99", [x * 25 for x in base], base, 10)
    down = noise.decide("p99", [x / 25 for x in base], base, 10)
    assert up.worse == pytest.approx(-down.worse) and up.fails and down.better


def test_unchanged_passes_and_2x_against_three_quiet_rounds_fails():
    quiet = [1000.0, 1010.0, 990.0]
    same = noise.decide("rps", [1000.0, 1003.0, 995.0], quiet, 10)
    assert not same.fails and not same.undecided and not same.noisy
    assert same.text.endswith("within the threshold")
    half = noise.decide("rps", [500.0, 505.0, 495.0], quiet, 10)
    assert half.fails and half.text.endswith(": regressed")
    slower = noise.decide("p99", [0.002, 0.00201, 0.00199], [0.001, 0.00101, 0.00099], 10)
    assert slower.fails and slower.change == pytest.approx(1.0)


def test_the_sign_is_the_change_s_everywhere():
    """The table showed -96.0% and the warning +96.0% for one fall: the
    change is now / base - 1, signed, in the verdict's text and both."""
    v = noise.decide("rps", [739.0], [18565.0], 10)
    assert v.change < 0 and v.text.startswith(f"rps x0.04 ({v.change:+.1%}) ")
    assert "-96.0%" in v.text
    w = noise.decide("p99", [0.003], [0.001], 10)
    assert w.change > 0 and "+200.0%" in w.text


def test_past_the_threshold_but_inside_the_band_cannot_decide():
    """A 26% fall at a 25% threshold, with both sides' rounds spread about
    17% (robust): the band is ±60%, so the gate cannot decide, and says
    the rounds are too noisy for a change of the threshold's size."""
    now = [100 * (1 + d) for d in (-0.25, -0.1, 0.0, 0.12, 0.3)]
    base = [135 * (1 + d) for d in (-0.25, -0.1, 0.0, 0.12, 0.3)]
    v = noise.decide("rps", now, base, 25)
    assert v.undecided and not v.fails and v.noisy
    assert "cannot decide" in v.text and "too noisy to judge a change of 25%" in v.text
    # A spread is robust: one wild round hardly moves it.
    calm = [100.0, 101.0, 99.0, 100.5, 99.5]
    assert noise.spread(calm + [300.0]) < 2 * noise.spread(calm)
    assert noise.spread([100.0]) == 0 and noise.spread([0.0, 1.0]) == 0


def test_the_threshold_keeps_its_plain_meaning():
    """rps:10% fails 10% fewer; p99:10% fails 10% longer."""
    base = [1000.0] * 5
    assert not noise.decide("rps", [910.0] * 5, base, 10).fails
    assert noise.decide("rps", [890.0] * 5, base, 10).fails
    assert not noise.decide("p99", [1090.0] * 5, base, 10).fails
    assert noise.decide("p99", [1110.0] * 5, base, 10).fails
    assert not noise.decide("rps", [1] * 3, [1000.0] * 3, 100).fails  # (no fall is past 100%)


def test_the_noise_rule_checks_its_arguments():
    with pytest.raises(ValueError, match="at least one round"):
        noise.decide("rps", [], [1.0], 10)
    for bad in (-1, float("nan"), float("inf"), True):
        with pytest.raises(ValueError, match="threshold"):
            noise.decide("rps", [1.0], [1.0], bad)
    assert not noise.decide("rps", [120.0], [100.0], 10).fails  # faster is no regression


def test_the_change_the_threshold_and_the_band_are_said_on_one_scale():
    """"rps regressed -30.5% (... noise band ±37.6%)" read as inside the
    band though the change was outside it on the log scale: each is now a
    ratio now / base, the band the ratios it spans, so that a reader can
    see which side of it the change falls."""
    base = [100 * (1 + d) for d in (-0.14, -0.07, 0.0, 0.07, 0.14)]
    now = [69.5 * (1 + d) for d in (-0.14, -0.07, 0.0, 0.07, 0.14)]
    v = noise.decide("rps", now, base, 10)
    low, high = math.exp(-v.band), math.exp(v.band)
    assert v.change + 1 < low  # outside, on the scale it is judged on
    assert v.fails
    assert f"x{v.change + 1:.2f} ({v.change:+.1%})" in v.text
    assert f"outside the noise band x{low:.2f}-x{high:.2f}" in v.text
    assert "threshold x0.90 (10%)" in v.text
    assert "±" not in v.text
    inside = noise.decide("rps", [90.0 * (1 + d) for d in (-0.14, -0.07, 0.0, 0.07, 0.14)],
                          base, 5)
    assert inside.undecided and "inside the noise band" in inside.text
    p99 = noise.decide("p99", [0.002] * 3, [0.001] * 3, 10)
    assert "threshold x1.10 (10%)" in p99.text and "x2.00 (+100.0%)" in p99.text
