"""httpbench.Histogram: precision against sorted data, exact merges, the
state round trip and its range."""

import random

import pytest

from httpbench import Histogram


def test_histogram_percentiles_within_its_precision():
    rng = random.Random(7)
    values = sorted(int(rng.lognormvariate(12, 1.5)) + 1000 for _ in range(20000))
    h = Histogram()
    for v in values:
        h.record(v)
    assert (h.count, h.min, h.max) == (len(values), values[0], values[-1])
    assert h.mean == pytest.approx(sum(values) / len(values))
    for p in (1, 10, 50, 90, 99, 99.9, 99.99):
        exact_value = values[max(0, int(-(-p * len(values) // 100)) - 1)]
        assert h.percentile(p) == pytest.approx(exact_value, rel=0.004), p
    assert h.percentile(100) == values[-1] and h.percentile(0) == values[0]


def test_histogram_merge_is_exact():
    rng = random.Random(1)
    a, b, both = Histogram(), Histogram(), Histogram()
    for _ in range(5000):
        v = rng.randrange(1, 10**10)
        (a if rng.random() < 0.5 else b).record(v)
        both.record(v)
    a.merge(b)
    assert a.state()[:3] == both.state()[:3] and a.state()[6] == both.state()[6]
    assert a.buckets() == both.buckets()
    for p in (50, 99, 99.9):
        assert a.percentile(p) == both.percentile(p)


def test_histogram_state_round_trip_and_range():
    h = Histogram()
    for v in (1, 255, 256, 1000, 10**6, 10**9, 100 * 10**9, 2**45):
        h.record(v)
    assert h.clamped == 1
    g = Histogram()
    g.restore(h.state())
    assert g.state() == h.state() and g.percentile(50) == h.percentile(50)
    with pytest.raises(ValueError):
        g.restore((5, 1, 2, 3.0, 9.0, 0, [(0, 1)]))


@pytest.mark.parametrize("call,bad,exc", [
    ("record", -1, ValueError), ("record", 2**64, ValueError), ("record", True, ValueError),
    ("record", False, ValueError), ("record", 1.0, TypeError),
    ("percentile", -1, ValueError), ("percentile", 100.5, ValueError),
    ("percentile", float("nan"), ValueError), ("percentile", True, ValueError),
])
def test_histogram_refuses_out_of_range(call, bad, exc):
    """The argument named, the histogram unchanged; a bool is an int to
    Python, but a value or a percentile of True is a slip."""
    h = Histogram()
    h.record(5)
    with pytest.raises(exc, match="value|p must"):
        getattr(h, call)(bad)
    assert h.count == 1 and h.max == 5


def test_p999_is_the_nearest_rank_when_the_count_is_a_multiple_of_1000():
    """999 values of 1 ms and one of 1 s: the 999th value is p99.9 (its
    nearest rank, ceil(0.999 x 1000) = 999), not the max. 99.9 / 100 in
    binary is a hair above 0.999, which made the rank 1000."""
    h = Histogram()
    for i in range(1000):
        h.record(10**6 if i < 999 else 10**9)
    assert abs(h.percentile(99.9) - 10**6) <= 10**6 * 0.004
    assert h.percentile(100) == 10**9
    for n in (2000, 10_000, 100_000):
        h = Histogram()
        for i in range(n):
            h.record(10**6 if i < n - n // 1000 else 10**9)
        assert h.percentile(99.9) < 2 * 10**6, n
        assert h.percentile(99.99) == 10**9, n
